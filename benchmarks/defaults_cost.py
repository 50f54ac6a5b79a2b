"""The cost of the defaults: the wall time of a default fit of each forecaster in each regime, by phase.

    python benchmarks/defaults_cost.py                        # every forecaster and regime, ~15 minutes
    python benchmarks/defaults_cost.py --models RSA --regimes short

Each fit is the forecaster at its defaults (only ``h`` and ``random_state`` given), one process on one
idle core (the plan's thread default), after an untimed warm-up fit of the same class on other data
(imports and first calls are paid once per process, as in a notebook's second cell). Phases of a neural
fit: ``plan`` (the fit plan), ``start`` (fitting and choosing the statistical start), ``data start``
(RSA's AR roots and seasonal periods for its REM heads), ``training`` (the optimiser steps) and
``validation`` (the validation passes inside training); ``other`` is the rest (validation of the
frame, scaling, windows, the fitted state). Regimes:

- ``short``: AirPassengers, 144 months, h 12 (one short series);
- ``panel``: the monthly series among the first 100 of the M3 sample (benchmarks/configs/m3_sample.csv when
  it exists, else the first 100 M3 monthly series) whose training parts reach the 54 steps a default
  network needs (input 2h + h), those training parts, h 18;
- ``long``: ETTh1's OT, its 12 training months (8,640 hours), h 96;
- ``hourly``: ETTh1's OT, its first 60 days (1,440 hours), h 24: where the look-back holds the week (168).

Writes one row per (forecaster, regime) to ``benchmarks/results/defaults_cost.csv`` with the plan's
steps, members and start candidates, the date and the machine.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.results import machine_description  # noqa: E402

RESULTS = HERE / "results"
MODELS = ("RSA", "Transformer", "LSTM", "DLinear", "ETS", "ARIMA", "Theta", "SeasonalNaive")
REGIMES = ("short", "panel", "long", "hourly")


def data_folder() -> Path:
    return Path(os.environ.get("TSRSA_DATA_DIR", HERE.parents[1] / "shared" / "datasets"))


def regime(name: str) -> tuple[pd.DataFrame, int]:
    folder = data_folder()
    if name == "short":
        air = pd.read_csv(folder / "classic" / "AirPassengers.csv")
        return pd.DataFrame({"unique_id": "AirPassengers", "y": air.iloc[:, 1].astype(float),
                             "ds": pd.date_range("1949-01-01", periods=len(air), freq="MS")}), 12
    if name == "panel":
        m3 = pd.read_csv(folder / "m3" / "M3-monthly.csv", parse_dates=["ds"])
        sample = HERE / "configs" / "m3_sample.csv"
        if sample.exists():
            ids = [i for i in pd.read_csv(sample)["unique_id"] if i in set(m3["unique_id"])][:100]
        else:
            ids = list(dict.fromkeys(m3["unique_id"]))[:100]
        m3 = m3[m3["unique_id"].isin(ids)]
        rank = m3.groupby("unique_id").cumcount(ascending=False)
        train = m3[rank >= 18]
        long_enough = train.groupby("unique_id")["y"].transform("size") >= 3 * 18  # the default input 2h, + h
        return train[long_enough].reset_index(drop=True), 18  # the training parts a default network takes
    hours, h = (60 * 24, 24) if name == "hourly" else (8640, 96)
    ett = pd.read_csv(folder / "ETTh1.csv", parse_dates=["date"]).iloc[:hours]
    return pd.DataFrame({"unique_id": "OT", "ds": ett["date"], "y": ett["OT"]}), h


@contextlib.contextmanager
def phase_timers():
    """Seconds spent in each phase of a neural fit, by wrapping the methods that run them."""
    from tsrsa.estimator import neural, started, training_run
    from tsrsa.training import loop

    spent = {"plan": 0.0, "start": 0.0, "data start": 0.0, "training": 0.0, "validation": 0.0}
    patched = []

    def wrap(owner, attribute, phase):
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            begin = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - begin

        setattr(owner, attribute, timed)
        patched.append((owner, attribute, original))

    wrap(neural, "resolve_plan", "plan")
    wrap(started.StatisticalStart, "fit", "start")
    wrap(tsrsa.RSAForecaster, "_prepare_fit", "data start")
    wrap(tsrsa.RSAForecaster, "_initialise_network", "data start")
    wrap(training_run, "train_network", "training")
    wrap(loop, "evaluate_loss", "validation")
    wrap(loop, "window_losses", "validation")
    try:
        yield spent
    finally:
        for owner, attribute, original in reversed(patched):
            setattr(owner, attribute, original)


def measure(model_name: str, regime_name: str) -> dict:
    cls = getattr(tsrsa, f"{model_name}Forecaster")
    df, h = regime(regime_name)
    warm, _ = regime("short")
    seed = {"random_state": 0} if "random_state" in cls(h=1).get_params() else {}
    cls(h=3, **seed).fit(warm.assign(y=warm["y"] * 1.01))  # imports, first calls (other data)
    model = cls(h=h, **seed)
    with phase_timers() as spent:
        begin = time.perf_counter()
        model.fit(df)
        total = time.perf_counter() - begin
    plan = getattr(model, "plan_", None)
    training = spent["training"] - spent["validation"]  # the validation passes run inside training
    row = {"date": dt.date.today().isoformat(), "model": model_name, "regime": regime_name, "h": h,
           "series": df["unique_id"].nunique(), "fit_seconds": round(total, 3)}
    if plan is not None:
        row.update({"plan_seconds": round(spent["plan"], 4), "start_seconds": round(spent["start"], 3),
                    "data_start_seconds": round(spent["data start"], 3), "training_seconds": round(training, 3),
                    "validation_seconds": round(spent["validation"], 3),
                    "other_seconds": round(total - spent["plan"] - spent["start"] - spent["data start"]
                                           - spent["training"], 3),
                    "start_share": round(spent["start"] / total, 4),
                    "start_seconds_per_series": round(spent["start"] / df["unique_id"].nunique(), 4),
                    "steps": plan.steps, "members": plan.members, "epochs_run": len(model.fit_history_),
                    "start_candidates": " ".join(plan.start_candidates), "start_kept": plan.start,
                    "threads": plan.threads})
    row["machine"] = machine_description()
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--regimes", default=",".join(REGIMES))
    parser.add_argument("--output", default=str(RESULTS / "defaults_cost.csv"))
    args = parser.parse_args(argv)
    out = Path(args.output)
    for regime_name in args.regimes.split(","):
        for model_name in args.models.split(","):
            row = measure(model_name, regime_name)
            pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
            print(row, flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
