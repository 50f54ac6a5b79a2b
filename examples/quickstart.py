"""Quick start as a script: load a real series, fit, predict, plot, cross-validate, save, load.

The plain-script twin of notebooks/01_quickstart.ipynb, offline (weekly Mauna Loa CO2 ships
with statsmodels)::

    python examples/quickstart.py                          # prints scores; writes nothing
    python examples/quickstart.py --output-dir quickstart  # also the plot and the saved model
    python examples/quickstart.py --budget small           # seconds: a tiny network, one epoch
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import tsrsa
from tsrsa import RSAForecaster, SeasonalNaiveForecaster, Trainer

H = 104  # two years of weeks


def network(budget: str) -> dict:
    """small: a narrow one-layer network for one epoch; full: the defaults for 20 epochs."""
    return dict(d_model=16, n_layers=1, d_ff=32, max_epochs=1) if budget == "small" else dict(max_epochs=20)


def score(forecast: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    return tsrsa.evaluate(forecast.merge(test, on=["unique_id", "ds"]).dropna(), ["mae", "mse"])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=("small", "full"), default="full", help="small: a seconds-long smoke run")
    parser.add_argument("--output-dir", type=Path, default=None, help="write the plot and the saved model here")
    parser.add_argument("--num-threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args(argv)

    # 1. a long frame: unique_id, ds, y (the station's missing weeks are NaN)
    df = tsrsa.datasets.load("co2")
    train, test = df.iloc[:-H], df.iloc[-H:]

    # 2. fit and predict; fill="interpolate" fills the missing weeks
    model = RSAForecaster(h=H, input_size=2 * H, patch_len=8, fill="interpolate", random_state=0,
                          trainer=Trainer(num_threads=args.num_threads), **network(args.budget))
    forecast = model.fit(train).predict()
    naive = SeasonalNaiveForecaster(h=H, fill="interpolate").fit(train).predict()
    scores = pd.concat({"RSA": score(forecast, test), "SeasonalNaive": score(naive, test)}).droplevel(1)
    print(f"co2, last {H} weeks held out (ppm):\n{scores.round(3)}\n")

    # 3. cross-validation over the last three two-year windows of the training part
    cv = model.cross_validate(train, n_windows=3)
    per_cutoff = tsrsa.evaluate(cv, ["mae", "mse"], by="cutoff").round({"mae": 3, "mse": 3})
    print(f"cross-validated error per cutoff:\n{per_cutoff}\n")

    # 4. save and load: a folder of plain files, read back on the CPU
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.output_dir / "model" if args.output_dir is not None else Path(scratch) / "model"
        model.save(folder, overwrite=True)  # a second run replaces the model the first one saved
        loaded = tsrsa.load(folder)
    np.testing.assert_allclose(loaded.predict()["yhat"], forecast["yhat"])
    print(f"saved and loaded {loaded!r}: same forecast")

    # 5. the plot (a matplotlib Figure), written only when asked
    if args.output_dir is not None:
        fig = model.plot(train, history=3 * H)
        fig.axes[0].plot(test["ds"], test["y"], color="black", lw=1, label="held out")
        fig.axes[0].legend(loc="upper left")
        fig.savefig(args.output_dir / "forecast.png", dpi=110)
        print(f"plot written to {args.output_dir / 'forecast.png'}")
    return {"scores": scores, "cv": cv, "model": model}


if __name__ == "__main__":
    main()
