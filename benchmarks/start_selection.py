"""When a network started at a statistical model should keep the start: a screen on nested validation.

    python benchmarks/start_selection.py                  # RSA and the twin, every cell, seeds 0-2 (~25 min)
    python benchmarks/start_selection.py --folds 1,2      # and a second outer block, the v steps before
    python benchmarks/start_selection.py --tables-only    # the RESULTS.md section from the rows

A neural forecaster at the defaults (``start="auto"``) starts as its statistical start S and keeps
the weights of its best validation epoch, the start itself counting as epoch 0. Chosen over a hundred
epochs on 9-187 validation windows, the best epoch's validation error flatters it (on the
short-series benchmark the networks' validation MSE is 0.70 of the start's and their test MSE 0.97).
The candidate rule screened here keeps the start unless the network's validation loss beats the
start's by ``z`` standard errors of the mean per-window difference (Newey-West, lag h - 1 for the
overlap of stride-1 windows; statsmodels' HAC): z = 0 is today's rule, a large z keeps the start
always.

A rule that chooses between validation epochs cannot be judged on the validation that chose: there,
today's rule wins by construction. So each cell of the short-series benchmark (series, length n,
seed) is split once more, on its training part only: the network fits on the steps before an
outer block of v training steps (v: the protocol's validation size at n), with the protocol's
validation at their end (the inner validation, which the rule reads), and each rule is scored on
the block (the outer validation, which no fit saw): fold 1 is the last v training steps, fold 2 the
v before them (the last v then unread, but for the one scaling of the cell's series, which leaves each
fit's ratios as they are). The test part is never read. Rows: one per (model, cell,
seed, fold) in ``results/start_selection.jsonl``, with the per-window losses, so a rule is scored
without a refit.
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tsrsa.benchmarking.classic import CLASSIC  # noqa: E402
from tsrsa.benchmarking.folders import data_folder  # noqa: E402
from tsrsa.benchmarking.results import machine_description, read_run_log, replace_section  # noqa: E402
from tsrsa.benchmarking.runner import best_epoch  # noqa: E402
from tsrsa.benchmarking.short_series import (  # noqa: E402
    build_forecaster, make_cell, reached_lengths, split_rule, window_forecasts,
)
from tsrsa.benchmarking.simulated import PROCESSES  # noqa: E402
from tsrsa.nn import zero_outputs  # noqa: E402
from tsrsa.training.start_margin import edge  # noqa: E402

ROWS = HERE / "results" / "start_selection.jsonl"
KEY = ["model", "dataset", "n", "seed", "fold"]
#: the standard errors by which the network must beat the start on the inner validation
MARGINS = (0.0, 0.5, 1.0, 1.645, 2.0, float("inf"))
LENGTHS = {"sunspots": (200, 500, 1000, 2000), "daily_min_temperatures": (200, 500, 1000, 2000)}


def cells(folder: Path | None):
    """(dataset, n) of the short-series benchmark at the defaults' lengths: 200 and 500 steps, and
    sunspots and daily_min_temperatures to 2,000."""
    for dataset in (*PROCESSES, *CLASSIC):
        for n in LENGTHS.get(dataset, (200, 500)):
            if n in reached_lengths(dataset, [n], folder):
                yield dataset, n


def nested_fit(model_name: str, dataset: str, n: int, seed: int, folder: Path | None, fold: int = 1,
               params: dict | None = None):
    """One nested fit at the defaults (``params`` over them), its outer validation the ``fold``-th block of v
    steps from the end of the training part (1: the last v): (model, the start alone, the cell's scaled
    series, the inner split, the inner and the outer validation origins); None when the steps before the
    block leave no training window."""
    cell = make_cell(dataset, n, seed, folder)
    v, h = cell.split.val_size, cell.split.h
    z, n = cell.z, n - (fold - 1) * v  # the steps after the outer validation are not read
    try:
        inner = split_rule(n - v, h, cell.split.season)
    except ValueError:
        return None
    model = build_forecaster(model_name, cell, seed,
                             {**(params or {}), "input_size": inner.input_size, "val_size": inner.val_size})
    model.fit(pd.DataFrame({"unique_id": dataset, "ds": cell.index[:n - v], "y": z[:n - v]}))
    alone = copy.deepcopy(model)  # the start alone: the network's own outputs at zero, as before training
    zero_outputs(alone.network_)
    origins = {"inner": np.arange(n - v - inner.val_size, n - v - h + 1), "outer": np.arange(n - v, n - h + 1)}
    return model, alone, z, inner, origins


def row_head(model_name: str, dataset: str, n: int, seed: int, fold: int, model, inner) -> dict:
    """What a row of a nested fit says first: the fit, its split and what it fitted."""
    return {"model": model_name, "dataset": dataset, "n": n, "seed": seed, "fold": fold, "h": model.h,
            "input_size": inner.input_size, "inner_val_size": inner.val_size,
            "start": (model.start_ or {}).get("model"), "best_epoch": best_epoch(model)}


def run_cell(model_name: str, dataset: str, n: int, seed: int, folder: Path | None, fold: int = 1) -> dict | None:
    """The row of one nested fit (:func:`nested_fit`): per-window losses of the network and of its start."""
    fit = nested_fit(model_name, dataset, n, seed, folder, fold)
    if fit is None:
        return None
    model, alone, z, inner, origins = fit
    h = model.h
    row = {**row_head(model_name, dataset, n, seed, fold, model, inner),
           "outer_val_size": len(origins["outer"]) + h - 1}
    for part, at in origins.items():
        targets = z[at[:, None] + np.arange(h)[None, :]]
        for name, fitted in (("network", model), ("start", alone)):
            err = window_forecasts(fitted, z, at, h) - targets
            row[f"{part}_{name}"] = (np.abs(err) if part == "inner" else np.square(err)).mean(axis=1).tolist()
    return row


def keeps_network(network, start, h: int, margin: float) -> bool:
    """The rule: the network's mean per-window loss beats the start's by ``margin`` HAC standard errors
    (the library's test, :func:`tsrsa.training.start_margin.edge`)."""
    if margin == 0.0:  # the best epoch: lower on average, by any amount
        return bool(np.mean(network) < np.mean(start))
    return edge(network, start, h - 1) > margin  # no difference: edge 0; z = inf: never


def scored(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row and margin: the outer validation MSE of what the rule keeps; ``start``: the start alone's."""
    out = rows[["model", "dataset", "n", "seed"]].copy()
    network = rows["outer_network"].map(np.mean)
    out["start"] = start = rows["outer_start"].map(np.mean)
    for margin in MARGINS:
        kept = [keeps_network(a, b, h, margin)
                for a, b, h in zip(rows["inner_network"], rows["inner_start"], rows["h"])]
        out[margin] = np.where(kept, network, start)
    return out


def section(rows: pd.DataFrame, command: str) -> str:
    table = scored(rows)
    folds = rows["fold"] if "fold" in rows else pd.Series(1, index=rows.index)
    lines = ["What: a network at the defaults (`start=\"auto\"`) keeps its best validation epoch, the start "
             "counting as epoch 0 (z = 0), or keeps the start unless its validation loss beats the start's by z "
             "HAC standard errors (z = ∞: the start always). Nested validation on the short-series benchmark: fitted "
             "on the training steps before an outer block of v steps, scored on that block (fold 1: the last v "
             "training steps; fold 2: the v before them, the last v unread; the test part is never read). "
             "Geometric mean of each rule's outer validation MSE over today's (z = 0), and the fits in which it "
             "keeps the start.\n",
             "| model | fold | fits | " + " | ".join(f"z = {m:g}" if np.isfinite(m) else "z = ∞" for m in MARGINS)
             + " |", "|---|---|---|" + "---|" * len(MARGINS)]
    groups = [(model, fold, group) for (model, fold), group in table.groupby([table["model"], folds], sort=False)]
    if folds.nunique() > 1:
        groups += [(model, "both", group) for model, group in table.groupby("model", sort=False)]
    for model, fold, group in groups:
        cells = []
        for margin in MARGINS:
            ratio = float(np.exp(np.mean(np.log(group[margin] / group[0.0]))))
            cells.append(f"{ratio:.3f} ({int((group[margin] == group['start']).sum())})")
        lines.append(f"| {model} | {fold} | {len(group)} | " + " | ".join(cells) + " |")
    lines += ["", f"Command: `{command}`. Date: {rows['date'].max()}. Machine: {rows['machine'].iloc[-1]}. "
              f"Rows: [`benchmarks/results/start_selection.jsonl`](results/start_selection.jsonl)."]
    return "\n".join(lines) + "\n"


def read_rows(path: Path) -> pd.DataFrame:
    return pd.DataFrame(read_run_log(path))


def nested_options(description: str, rows: Path, folds: str) -> argparse.ArgumentParser:
    """The options of a nested-validation screen: models, seeds, outer blocks, rows, RESULTS.md, tables only."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--models", default="RSA,Transformer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--folds", default=folds, help="outer validation blocks, counted from the end (e.g. 1,2)")
    parser.add_argument("--rows", type=Path, default=rows)
    parser.add_argument("--results-md", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--tables-only", action="store_true")
    return parser


def run_missing(run_cell, args) -> None:
    """Every (model, cell, seed, fold) of ``args`` without a row in ``args.rows``: ``run_cell(model, dataset,
    n, seed, folder, fold)``'s row appended as it ends (None: too short for that fold)."""
    import torch

    torch.set_num_threads(1)
    folder = data_folder() / "classic"
    done = read_rows(args.rows) if args.rows.exists() else pd.DataFrame(columns=KEY)
    seen = set(done[KEY].itertuples(index=False, name=None))
    args.rows.parent.mkdir(parents=True, exist_ok=True)
    runs = [(m, d, n, s, f) for f in (int(x) for x in args.folds.split(",")) for m in args.models.split(",")
            for d, n in cells(folder) for s in (int(x) for x in args.seeds.split(","))]
    for model, dataset, n, seed, fold in runs:
        if (model, dataset, n, seed, fold) in seen:
            continue
        row = run_cell(model, dataset, n, seed, folder, fold)
        if row is None:  # too short for this fold: every seed alike
            continue
        row.update(date=dt.date.today().isoformat(), machine=machine_description() + ", 1 thread")
        with args.rows.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(model, dataset, n, seed, fold, flush=True)


def main(argv=None) -> None:
    args = nested_options(__doc__.splitlines()[0], ROWS, "1").parse_args(argv)
    if not args.tables_only:
        run_missing(run_cell, args)
    rows = read_rows(args.rows)
    folds = ",".join(str(f) for f in sorted(rows["fold"].unique()))
    text = section(rows, f"python benchmarks/start_selection.py --folds {folds}")
    print(text)
    replace_section(args.results_md, "start-selection", text,
                    title="Keeping the statistical start: a rule screened on nested validation")


if __name__ == "__main__":
    main()
