"""Hyperparameter search with Optuna on a real series, with the study's history and importances.

The plain-script twin of notebooks/04_tuning.ipynb (weekly Mauna Loa CO2, one year ahead)::

    python examples/tuning.py                                   # 30 trials, in memory
    python examples/tuning.py --storage tune.journal            # a study that resumes when re-run
    python examples/tuning.py --storage sqlite:///tune.db --n-trials 10   # run it in several shells:
                                                                # the workers share one study
    python examples/tuning.py --budget small --output-dir tuning   # seconds; also writes the plots
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from optuna.distributions import FloatDistribution

import tsrsa
from tsrsa import RSAForecaster, Trainer

H = 52


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=("small", "full"), default="full", help="small: a seconds-long smoke run")
    parser.add_argument("--n-trials", type=int, default=None, help="trials in this run (default 30; small: 4)")
    parser.add_argument("--storage", default=None, help="journal file or database URL (default: in memory)")
    parser.add_argument("--study-name", default="co2-rsa")
    parser.add_argument("--output-dir", type=Path, default=None, help="write the history and importance plots here")
    parser.add_argument("--num-threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args(argv)
    small = args.budget == "small"

    df = tsrsa.datasets.load("co2")
    train, test = df.iloc[:-H], df.iloc[-H:]
    network = dict(n_layers=1, d_ff=32, max_epochs=1) if small else dict(max_epochs=15)
    patience = "auto" if small else 3
    model = RSAForecaster(h=H, input_size=3 * H, fill="interpolate", val_size=H, random_state=0,
                          trainer=Trainer(num_threads=args.num_threads, early_stopping_patience=patience), **network)
    space = {
        "d_model": [16, 32] if small else [32, 64, 128],
        "patch_len": [4, 8, 13],
        "learning_rate": FloatDistribution(1e-4, 1e-2, log=True),
        "rem__gate_init": FloatDistribution(-2.0, 2.0),
    }
    n_trials = args.n_trials if args.n_trials is not None else (4 if small else 30)
    result = tsrsa.tune(model, train, n_trials=n_trials, search_space=space, n_windows=2, metric="mae",
                        storage=args.storage, study_name=args.study_name, random_state=None if args.storage else 0,
                        verbose=0 if small else 1)
    print(f"{len(result.study.trials)} trials in the study; best cross-validated MAE {result.best_score:.3f} ppm")
    print("best parameters:", result.best_params)
    scored = result.best_estimator.predict().merge(test, on=["unique_id", "ds"]).dropna()
    print("the tuned model on the held-out year:\n", tsrsa.evaluate(scored, ["mae", "mse"]).round(3))

    if args.output_dir is not None:
        import matplotlib
        import matplotlib.pyplot as plt
        import optuna
        from optuna.visualization.matplotlib import plot_optimization_history, plot_param_importances

        args.output_dir.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings(), matplotlib.rc_context():  # Optuna's plots set a global style
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            for name, draw in [("history", plot_optimization_history), ("importances", plot_param_importances)]:
                figure = draw(result.study).figure
                figure.savefig(args.output_dir / f"{name}.png", dpi=110, bbox_inches="tight")
                plt.close(figure)
        print(f"plots written to {args.output_dir}")
    return result


if __name__ == "__main__":
    main()
