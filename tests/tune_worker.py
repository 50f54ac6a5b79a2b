"""A tuning worker for the multi-process tests.

``python tune_worker.py STORAGE STUDY N_TRIALS [--heartbeat SECONDS] [--hang]``

STORAGE is a journal file or a database URL, passed to ``tsrsa.tune`` as it is; with
``--heartbeat`` the URL becomes a ``tsrsa.tuning.database_storage`` whose running trials beat every SECONDS (see
:func:`heartbeat_storage`). With ``--hang`` the worker's first trial records a heartbeat, prints
``running <trial number>`` and then waits until the process is killed.
"""
import argparse
import threading

from conftest import make_panel

import tsrsa
from tsrsa.tuning import database_storage

#: the season lengths every worker searches
SEASONS = [2, 3, 4, 5, 6, 7, 8]


def heartbeat_storage(url: str, interval: int):
    """A storage on ``url`` that fails a trial whose heartbeat is ``2 * interval`` seconds old and
    queues it again once."""
    return database_storage(url, heartbeat_interval=interval, grace_period=2 * interval, max_retry=1)


def hanging_space(storage, study_name: str):
    """A search space whose trial beats once, says it runs, and then never returns."""
    def space(trial) -> dict:
        params = {"season_length": trial.suggest_categorical("season_length", SEASONS)}
        study_id = storage.get_study_id_from_name(study_name)
        storage.record_heartbeat(storage.get_trial_id_from_study_id_trial_number(study_id, trial.number))
        print(f"running {trial.number}", flush=True)
        threading.Event().wait()  # until the process is killed
        return params

    return space


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("storage")
    parser.add_argument("study")
    parser.add_argument("n_trials", type=int)
    parser.add_argument("--heartbeat", type=int, default=None, metavar="SECONDS")
    parser.add_argument("--hang", action="store_true")
    args = parser.parse_args(argv)
    storage = args.storage if args.heartbeat is None else heartbeat_storage(args.storage, args.heartbeat)
    space = {"season_length": SEASONS}
    if args.hang:
        if args.heartbeat is None:
            parser.error("--hang needs --heartbeat (without it a killed trial stays RUNNING for good)")
        space = hanging_space(storage, args.study)
    tsrsa.tune(tsrsa.SeasonalNaiveForecaster(h=4), make_panel(length=60), n_trials=args.n_trials,
               storage=storage, study_name=args.study, search_space=space, refit=False)


if __name__ == "__main__":
    main()
