"""Reconciled against base forecasts on a hierarchy constructed from M4 Hourly series.

    python benchmarks/hierarchy.py                      # SeasonalNaive, Theta, ETS; rows to results/hierarchy.csv
    python benchmarks/hierarchy.py --models SeasonalNaive,Theta --groups 8
    python benchmarks/hierarchy.py --table              # the table of results/hierarchy.csv

The hierarchy is constructed, not observed: M4 Hourly carries no dates and no grouping, so the series
of equal span (the 245 whose training part holds 960 hours) are aligned by position (integer time
0..959), cut in file order into ``--groups`` contiguous groups of near-equal size (series k of n goes
to group k * groups // n), and the groups summed into a total: 245 bottom series, 8 groups, 1 total,
254 nodes. The test part is the competition's: the 48 hours after each training part, summed the same
way for the groups and the total.

Each model (``SeasonalNaiveForecaster`` and ``ThetaForecaster`` at season 24, ``ETSForecaster`` with
season 24 and ``initialization="heuristic"``, for minutes rather than an hour; on request ``--models DLinear``,
one global ``DLinearForecaster`` with input 168 at its defaults) is fitted once on all 254
nodes' training parts; its base forecasts of the 48 hours are then reconciled by each method of
``tsrsa.reconcile`` (MinT-shrink and the average-proportions top-down read ``model.fitted()``, the
one-step-ahead in-sample fitted values). Scores per level (total, group, bottom): MASE (the MAE over
the in-sample MAE of the lag-24 naive, per node, averaged over the level's nodes), base and reconciled
side by side, and the seconds of the fit and of each reconciliation. Rows go to ``results/hierarchy.csv``
as each model ends, with the date, the library's version and commit, and the parameters.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.m3_sample import package_identity
from tsrsa.benchmarking.results import append_rows

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "hierarchy.csv"
H, SEASON, SPAN = 48, 24, 960
METHODS = ("bottom_up", "top_down", "top_down_average", "ols", "wls_struct", "mint_shrink")
MODELS = ("SeasonalNaive", "Theta", "ETS")  # the default run; "DLinear" (one global network) on request
COLUMNS = ("date", "tsrsa_version", "tsrsa_commit", "dataset", "nodes", "bottom", "groups", "horizon", "model",
           "method", "level", "mase", "base_mase", "fit_seconds", "reconcile_seconds", "params")
DATASET = "M4 Hourly, constructed hierarchy"


def build(groups: int, data_dir: str | None):
    """(train frame of every node, test frame of every node, S_df, tags) of the constructed hierarchy."""
    import tsrsa
    from tsrsa.benchmarking.m4 import load_split

    split = load_split("Hourly", "test", data_dir)
    ids = [sid for sid, y in split.history.items() if len(y) == SPAN]
    n = len(ids)
    rows = []
    for part, values in (("train", split.history), ("test", split.future)):
        for k, sid in enumerate(ids):
            y = values[sid]
            start = 0 if part == "train" else SPAN
            rows.append(pd.DataFrame({"part": part, "group": f"g{k * groups // n}", "series": sid,
                                      "ds": np.arange(start, start + len(y)), "y": y}))
    bottom = pd.concat(rows, ignore_index=True)
    spec = [["total"], ["total", "group"], ["total", "group", "series"]]
    train, S_df, tags = tsrsa.aggregate(bottom[bottom["part"] == "train"], spec)
    test, _, _ = tsrsa.aggregate(bottom[bottom["part"] == "test"], spec)
    return train, test, S_df, tags


def forecaster(name: str):
    import tsrsa

    if name == "SeasonalNaive":
        return tsrsa.SeasonalNaiveForecaster(h=H, season_length=SEASON, freq=1)
    if name == "Theta":
        return tsrsa.ThetaForecaster(h=H, season_length=SEASON, freq=1)
    if name == "ETS":
        return tsrsa.ETSForecaster(h=H, season_length=SEASON, freq=1, initialization="heuristic")
    if name == "DLinear":
        return tsrsa.DLinearForecaster(h=H, input_size=168, freq=1, random_state=0)
    raise ValueError(f"unknown model {name!r}; one of {(*MODELS, 'DLinear')}")


def node_mase(forecasts: pd.DataFrame, test: pd.DataFrame, train: pd.DataFrame, column: str) -> pd.Series:
    """MASE of each node (index: unique_id)."""
    joined = forecasts.merge(test, on=["unique_id", "ds"])
    mae = (joined["y"] - joined[column]).abs().groupby(joined["unique_id"]).mean()
    scale = train.groupby("unique_id")["y"].apply(lambda y: np.mean(np.abs(y.to_numpy()[SEASON:]
                                                                           - y.to_numpy()[:-SEASON])))
    return mae / scale.loc[mae.index]


def run(model_name: str, train, test, S_df, tags, groups: int, output: Path) -> list[dict]:
    import tsrsa

    model = forecaster(model_name)
    start = time.perf_counter()
    model.fit(train)
    fit_seconds = time.perf_counter() - start
    base = model.predict()
    fitted = model.fitted()
    level_of = {sid: name for name, label in zip(("total", "group", "bottom"), tags) for sid in tags[label]}
    base_scores = node_mase(base, test, train, "yhat")
    version, commit = package_identity()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    params = json.dumps({k: v for k, v in model.get_params().items()
                         if k in ("h", "season_length", "freq", "initialization", "input_size", "random_state")},
                        sort_keys=True)
    common = {"date": stamp, "tsrsa_version": version, "tsrsa_commit": commit, "dataset": DATASET,
              "nodes": len(S_df), "bottom": S_df.shape[1] - 1, "groups": groups, "horizon": H, "model": model_name,
              "fit_seconds": round(fit_seconds, 2), "params": params}
    rows = []
    for method in ("base", *METHODS):
        if method == "base":
            scores, seconds = base_scores, 0.0
        else:
            start = time.perf_counter()
            out = tsrsa.reconcile(base, hierarchy=(S_df, tags), df=fitted, method=method)
            seconds = time.perf_counter() - start
            scores = node_mase(out, test, train, "yhat")
        for level in ("total", "group", "bottom"):
            ids = [sid for sid in scores.index if level_of[sid] == level]
            rows.append({**common, "method": method, "level": level, "mase": round(float(scores[ids].mean()), 4),
                         "base_mase": round(float(base_scores[ids].mean()), 4),
                         "reconcile_seconds": round(seconds, 3)})
    append_rows(output, rows, COLUMNS)
    return rows


def table(path: Path = OUTPUT) -> str:
    frame = pd.read_csv(path).drop_duplicates(["model", "method", "level"], keep="last")
    wide = frame.pivot_table(index=["model", "method"], columns="level", values="mase", sort=False)
    lines = ["| model | method | total | group | bottom | fit s | reconcile s |", "|---|---|---|---|---|---|---|"]
    seconds = frame.drop_duplicates(["model", "method"], keep="last").set_index(["model", "method"])
    for (model, method), row in wide.iterrows():
        s = seconds.loc[(model, method)]
        lines.append(f"| {model} | {method} | {row['total']:.3f} | {row['group']:.3f} | {row['bottom']:.3f} | "
                     f"{s['fit_seconds']:.1f} | {s['reconcile_seconds']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--data-dir", default=os.environ.get("TSRSA_DATA_DIR", str(HERE.parents[1] / "shared" /
                                                                                   "datasets")))
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.output))
        return
    train, test, S_df, tags = build(args.groups, args.data_dir)
    for name in args.models.split(","):
        start = time.perf_counter()
        run(name, train, test, S_df, tags, args.groups, args.output)
        print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
