"""What averaging several fits of one network gives on the short series: a seed ensemble at the defaults.

    python benchmarks/seed_ensemble.py --models RSA,Transformer --members 5
    python benchmarks/seed_ensemble.py --tables-only

Each cell of the short-series benchmark (``benchmarks/short_series.py``: its series, lengths, split rule
and scoring; a simulated process on its first path) is fitted ``--members`` times at the library's
defaults but one network each (``ensemble_size=1``; rows made before the parameter existed record no such
key, one network being all a fit trained), once per ``random_state`` 0, 1, ..., the protocol's settings
otherwise. A k-member ensemble forecasts the mean of the first k fits' forecasts; it is set against the
mean error of the same k fits taken one at a time, on the validation windows (what a choice may read) and
on the test windows. The squared error of a mean is never above the mean of the squared errors, so the
ratios say how much averaging buys, not whether. Each cell's row goes to ``results/seed_ensemble.jsonl``
once its fits end; the RESULTS.md section "seed-ensemble" is made from the rows, with the best of ETS and
ARIMA from ``results/short_series.csv`` where the short-series benchmark fitted them.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tsrsa.benchmarking.classic import CLASSIC  # noqa: E402
from tsrsa.benchmarking.folders import data_folder  # noqa: E402
from tsrsa.benchmarking.results import (  # noqa: E402
    latest_rows, machine_description, read_run_log, replace_section, rows_footer,
)
from tsrsa.benchmarking.short_series import (  # noqa: E402
    build_forecaster, make_cell, reached_lengths, score_windows, window_forecasts,
)
from tsrsa.benchmarking.simulated import PROCESSES  # noqa: E402
from tsrsa.estimator.trainer import flat_params  # noqa: E402

ROWS = HERE / "results" / "seed_ensemble.jsonl"
ANCHOR_ROWS = HERE / "results" / "short_series.csv"
MODELS = ("RSA", "Transformer", "LSTM", "DLinear")
SIZES = (3, 5)  # the ensemble sizes the table reports (those the rows' members reach)
#: the lengths of the short-series benchmark's runs at the defaults; the two long series also at more
LENGTHS, LONG_LENGTHS, LONG_SERIES = (200, 500), (1000, 2000), ("sunspots", "daily_min_temperatures")


def cells(folder: Path | None) -> list[tuple[str, int]]:
    """(dataset, training length) of every cell: the processes, and the classic series of ``folder`` at the
    lengths they reach."""
    out = [(name, n) for name in PROCESSES for n in LENGTHS]
    for name in CLASSIC if folder is not None else ():  # without the data folder: the processes alone
        lengths = LENGTHS + (LONG_LENGTHS if name in LONG_SERIES else ())
        out += [(name, n) for n in reached_lengths(name, lengths, folder)]
    return out


def run_cell(model: str, dataset: str, n: int, members: int, folder: Path | None) -> dict:
    """Fit ``members`` seeds of ``model`` on one cell; their scores and those of the ensembles of :data:`SIZES`."""
    cell = make_cell(dataset, n, 0, folder)
    z, val_forecasts, test_forecasts, single, seconds = cell.z, [], [], [], []
    for seed in range(members):
        estimator = build_forecaster(model, cell, seed, {"ensemble_size": 1})  # a member: one network
        began = time.perf_counter()
        estimator.fit(pd.DataFrame({"unique_id": dataset, "ds": cell.index[:n], "y": z[:n]}))
        seconds.append(round(time.perf_counter() - began, 2))
        h = estimator.h
        origins = cell.origins("val", h), cell.origins("test", h)
        val_forecasts.append(window_forecasts(estimator, z, origins[0], h))
        test_forecasts.append(window_forecasts(estimator, z, origins[1], h))
        single.append([score_windows(f, z, o)[0] for f, o in zip((val_forecasts[-1], test_forecasts[-1]), origins)])
    params = {k: v for k, v in flat_params(estimator.get_params(), type(estimator)).items()
              if k not in ("verbose", "random_state")}
    ensembles = {str(k): {"val_mse": score_windows(np.mean(val_forecasts[:k], axis=0), z, origins[0])[0],
                          "test_mse": score_windows(np.mean(test_forecasts[:k], axis=0), z, origins[1])[0]}
                 for k in SIZES if k <= members}
    return {"model": model, "dataset": dataset, "n": n, "members": members, "params": params,
            "member_val_mse": [s[0] for s in single], "member_test_mse": [s[1] for s in single],
            "ensembles": ensembles, "fit_seconds": seconds}


# ---------------------------------------------------------------------- tables
def best_anchors(path: Path) -> dict:
    """(dataset, n) -> the lower test MSE of ETS and ARIMA in the short-series rows."""
    if not path.exists():
        return {}
    rows = pd.read_csv(path, usecols=["dataset", "train_length", "model", "test_mse"])
    rows = rows[rows.model.isin(["ETS", "ARIMA"])]
    means = rows.groupby(["dataset", "train_length", "model"]).test_mse.mean()
    return means.groupby(level=[0, 1]).min().to_dict()


def geometric_mean(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def ratios(row: dict, k: int) -> tuple[float, float]:
    """(validation, test) MSE of the k-member ensemble over the mean of its k members' own."""
    ensemble = row["ensembles"][str(k)]
    return (ensemble["val_mse"] / np.mean(row["member_val_mse"][:k]),
            ensemble["test_mse"] / np.mean(row["member_test_mse"][:k]))


def render(rows: list[dict], anchors: dict) -> str:
    rows = latest_rows(rows, lambda r: (r["model"], r["dataset"], r["n"]))
    models = [m for m in MODELS if any(r["model"] == m for r in rows)]
    lines = ["What: each short-series cell (the benchmark's series, lengths, split rule and scoring; a simulated "
             "process on its first path) fitted at the library's defaults with `random_state` 0, 1, ...; a "
             "k-member ensemble forecasts the mean of the first k fits' forecasts. Ratios: the ensemble's MSE over "
             "the mean MSE of the same k fits one at a time (below 1: the ensemble is better), geometric means over "
             "cells; validation is what a choice may read, test is reported beside it (the squared error of a mean is "
             "never above the mean of the squared errors: the ratios say how much averaging buys, not whether). "
             "Anchor: the lower test MSE of ETS and ARIMA in `results/short_series.csv`; \"within 5 % / 2 %\" "
             "counts the classic series' cells that have one.",
             "", "| model | k | cells | validation ÷ single | better on validation | test ÷ single | better on test "
             "| within 5 % of the anchor: single / ensemble | within 2 %: single / ensemble | fit seconds per member |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for model in models:
        mine = [r for r in rows if r["model"] == model]
        for k in SIZES:
            reached = [r for r in mine if str(k) in r["ensembles"]]
            if not reached:
                continue
            pairs = [ratios(r, k) for r in reached]
            scored = [r for r in reached if r["dataset"] in CLASSIC and (r["dataset"], r["n"]) in anchors]
            counts = []
            for limit in (1.05, 1.02):
                single = sum(np.mean(r["member_test_mse"][:k]) <= limit * anchors[(r["dataset"], r["n"])]
                             for r in scored)
                ensemble = sum(r["ensembles"][str(k)]["test_mse"] <= limit * anchors[(r["dataset"], r["n"])]
                               for r in scored)
                counts.append(f"{single} / {ensemble} of {len(scored)}")
            seconds = np.mean([s for r in reached for s in r["fit_seconds"][:k]])
            lines.append(f"| {model} | {k} | {len(reached)} | {geometric_mean([p[0] for p in pairs]):.3f} | "
                         f"{sum(p[0] < 1 for p in pairs)}/{len(pairs)} | {geometric_mean([p[1] for p in pairs]):.3f} | "
                         f"{sum(p[1] < 1 for p in pairs)}/{len(pairs)} | {counts[0]} | {counts[1]} | {seconds:.1f} |")
    k = SIZES[0]
    lines += ["", f"By cell, {k} members: validation / test ratio of each model.", "",
              "| dataset | n | " + " | ".join(models) + " |", "|---|---|" + "---|" * len(models)]
    keys = list(dict.fromkeys((r["dataset"], r["n"]) for r in rows))
    for dataset, n in keys:
        by_model = {r["model"]: r for r in rows if (r["dataset"], r["n"]) == (dataset, n) and str(k) in r["ensembles"]}
        cells_text = [("%.3f / %.3f" % ratios(by_model[m], k)) if m in by_model else "" for m in models]
        lines.append(f"| {dataset} | {n} | " + " | ".join(cells_text) + " |")
    lines += ["", rows_footer(rows, "results/seed_ensemble.jsonl")]
    return "\n".join(lines)


def write_tables(rows_path: Path, results_md: Path, anchors_path: Path) -> None:
    rows = read_run_log(rows_path)
    if not rows:
        raise SystemExit(f"{rows_path} has no rows: run the benchmark first")
    replace_section(results_md, "seed-ensemble", render(rows, best_anchors(anchors_path)),
                    title="Seed ensembles on the short series")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="RSA,Transformer", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--members", type=int, default=5, help="fits per cell, random_state 0..members-1")
    parser.add_argument("--datasets", default=None, help="comma-separated; default: every cell")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--rows", type=Path, default=ROWS)
    parser.add_argument("--results-md", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--anchors", type=Path, default=ANCHOR_ROWS)
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        raise ValueError(f"--models takes {', '.join(MODELS)}; got {args.models!r}")
    if args.members < SIZES[0]:
        raise ValueError(f"--members must be at least {SIZES[0]} (the smallest ensemble reported); got {args.members}")
    if not args.tables_only:
        import torch

        torch.set_num_threads(1)
        folder = data_folder(args.data_dir, HERE.parents[1] / "shared" / "datasets") / "classic"
        wanted = None if args.datasets is None else set(args.datasets.split(","))
        done = {(r["model"], r["dataset"], r["n"], r["members"]) for r in read_run_log(args.rows)}
        command = " ".join(["python benchmarks/seed_ensemble.py", f"--models {args.models}",  # what ran, not where
                            f"--members {args.members}", *([f"--datasets {args.datasets}"] if args.datasets else [])])
        for model in models:
            for dataset, n in cells(folder if folder.exists() else None):
                if (wanted is not None and dataset not in wanted) or (model, dataset, n, args.members) in done:
                    continue
                row = run_cell(model, dataset, n, args.members, folder if folder.exists() else None)
                row = {"date": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine_description(),
                       "command": command, **row}
                args.rows.parent.mkdir(parents=True, exist_ok=True)
                with open(args.rows, "a") as fh:  # one row per finished cell: an interruption keeps them
                    fh.write(json.dumps(row, default=str) + "\n")
                print(f"{model} {dataset} {n}: " + ", ".join(
                    f"k={k} {ratios(row, k)[0]:.3f} / {ratios(row, k)[1]:.3f}" for k in SIZES if k <= args.members),
                    flush=True)
    write_tables(args.rows, args.results_md, args.anchors)


if __name__ == "__main__":
    main()
