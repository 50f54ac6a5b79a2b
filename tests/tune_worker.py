"""A tuning worker for the multi-process tests: python tune_worker.py STORAGE STUDY N_TRIALS."""
import sys

from conftest import make_panel

import tsrsa

if __name__ == "__main__":
    storage, study, n_trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tsrsa.tune(tsrsa.SeasonalNaiveForecaster(h=4), make_panel(length=60), n_trials=n_trials,
               storage=storage, study_name=study, search_space={"season_length": [2, 3, 4, 5, 6, 7, 8]},
               refit=False)
