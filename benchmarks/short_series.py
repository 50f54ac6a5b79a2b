"""Short-series benchmark: test error against training length (200, 500, 1000, 2000 steps).

    python benchmarks/short_series.py                        # every dataset, length, model and seed
    python benchmarks/short_series.py --datasets simulated --models RSA,Transformer --seeds 0,1,2
    python benchmarks/short_series.py --models RSA --params '{"gate_init": -2}' --label gate_init=-2
    python benchmarks/short_series.py --tables-only          # RESULTS.md section and plot from the CSV

The protocol is ``short_series_tables.INTRO`` (data, split rule, models, scoring); its pieces are
the library's: the cells, the split rule and the runs in ``tsrsa.benchmarking.short_series``, the
processes in ``tsrsa.benchmarking.simulated``, the classic series in ``tsrsa.benchmarking.classic``,
the statistical anchors in ``tsrsa.benchmarking.statistical_anchors``. Classic series are read from
``<data dir>/classic``: ``--data-dir``, else ``TSRSA_DATA_DIR``, else ``../shared/datasets`` beside
the checkout; skipped when absent. Each finished run appends a row to ``results/short_series.csv``
with the explicit parameters it ran (``get_params()`` of a tsrsa forecaster, the chosen form and
estimates of a statistical model); ``val_mse`` is scored on the protocol's validation windows. A
(dataset, train_length, model, label, seed) that has a row is skipped unless ``--force``.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import sys
from pathlib import Path

import pandas as pd
from threadpoolctl import threadpool_limits

import tsrsa
from short_series_tables import KEY, auto_table, write_outputs
from tsrsa.benchmarking.classic import CLASSIC
from tsrsa.benchmarking.compat import accepted_names
from tsrsa.benchmarking.folders import data_folder
from tsrsa.benchmarking.results import machine_description
from tsrsa.benchmarking.short_series import (
    ANCHORS, FORECASTERS, LENGTHS, Cell, make_cell, reached_lengths, run_anchor, run_auto, run_forecaster,
)
from tsrsa.benchmarking.simulated import PROCESSES

HERE = Path(__file__).resolve().parent

NEURAL = {name: FORECASTERS[name] for name in ("RSA", "Transformer", "LSTM", "DLinear")}
MODELS = (*NEURAL, "SeasonalNaive", *ANCHORS, "Auto")
MODEL_NAMES = {**FORECASTERS, "ETS": "ETS", "ARIMA": "ARIMA", "TrueModel": "true model",
               "TrueParams": "true parameters", "Auto": "AutoForecaster"}
COLUMNS = ("date", "dataset", "train_length", "horizon", "input_size", "val_size", "model", "label", "seed",
           "params", "val_mse", "test_mse", "test_mae", "test_windows", "train_seconds", "best_epoch", "machine")


def data_dir(given: str | None) -> Path:
    """``given``, else ``TSRSA_DATA_DIR``, else ``shared/datasets`` beside the checkout."""
    return data_folder(given, HERE.parent.parent / "shared" / "datasets")


# ---------------------------------------------------------------------- rows
def read_rows(path: Path) -> pd.DataFrame:
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    df = pd.read_csv(path, dtype={"label": str, "model": str, "dataset": str, "params": str})
    if tuple(df.columns) != COLUMNS:
        fail(f"{path} has columns {list(df.columns)}; expected {list(COLUMNS)}")
    return df


def append_row(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as fh:  # one row per finished run: an interruption keeps them
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerows(([COLUMNS] if new else []) + [[row[c] for c in COLUMNS]])


def make_row(cell: Cell, name: str, label: str, seed: int, result: dict, machine: str) -> dict:
    mse, mae = result["test"]
    rnd = lambda v: "" if v is None else round(float(v), 6)  # noqa: E731
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), "dataset": cell.dataset,
            "train_length": cell.n, "horizon": cell.split.h, "input_size": result["input_size"],
            "val_size": result["val_size"], "model": MODEL_NAMES[name], "label": label, "seed": int(seed),
            "params": json.dumps(result["params"], sort_keys=True, default=str), "val_mse": rnd(result["val_mse"]),
            "test_mse": rnd(mse), "test_mae": rnd(mae), "test_windows": len(cell.origins("test")),
            "train_seconds": round(result["seconds"], 2), "machine": machine,
            "best_epoch": "" if result["best_epoch"] is None else result["best_epoch"]}  # 0: the starting weights


# ---------------------------------------------------------------------- command line
def fail(message: str):
    """End with one line on stderr and exit status 2 (bad flags or files)."""
    print(f"short_series.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _list(text: str, allowed, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in items if t not in allowed]
    if unknown or not items:
        fail(f"unknown {what} {unknown or text!r}; choose from {', '.join(allowed)}")
    return items


def _ints(text: str, what: str, minimum: int) -> list[int]:
    values = [t.strip() for t in text.split(",") if t.strip()]
    if not values or not all(t.isdigit() and int(t) >= minimum for t in values):
        fail(f"--{what} takes comma-separated integers >= {minimum}, got {text!r}")
    return [int(t) for t in values]


def parse_params(text: str | None, models: list[str]) -> dict:
    """The --params JSON object, checked against every chosen tsrsa forecaster's parameters."""
    if not text:
        return {}
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"--params is not valid JSON ({exc.msg}): {text!r}")
    if not isinstance(params, dict):
        fail(f"--params must be a JSON object such as '{{\"gate_init\": -2}}', got {text!r}")
    targets = [m for m in models if m in NEURAL or m == "SeasonalNaive"]
    if not targets:
        fail("--params applies to tsrsa forecasters; choose one with --models")
    for m in targets:
        cls = getattr(tsrsa, MODEL_NAMES[m])
        unknown = sorted(set(params) - set(cls.param_names()) - accepted_names(cls))  # an option by its own name too
        if unknown:
            fail(f"{MODEL_NAMES[m]} has no parameter(s) {unknown}")
    return params


def main(argv=None) -> None:
    datasets_all = [*PROCESSES, *CLASSIC]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="all",
                        help=f"comma-separated names, 'simulated', 'classic' or 'all' ({', '.join(datasets_all)})")
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="training lengths in steps")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated: {', '.join(MODELS)}")
    parser.add_argument("--seeds", default="0,1,2", help="seeds (simulated: also the path)")
    parser.add_argument("--params", help="JSON object of constructor arguments for the tsrsa forecasters")
    parser.add_argument("--label", help="name of the configuration in the rows (default: from --params)")
    parser.add_argument("--data-dir", help="folder holding classic/ (default: TSRSA_DATA_DIR or ../shared/datasets)")
    parser.add_argument("--results", default=str(HERE / "results" / "short_series.csv"))
    parser.add_argument("--results-md", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--plot", default=str(HERE / "results" / "short_series.png"))
    parser.add_argument("--force", action="store_true", help="run cells that already have a row")
    parser.add_argument("--tables-only", action="store_true", help="only re-render RESULTS.md and the plot")
    parser.add_argument("--auto-table", action="store_true", help="print AutoForecaster's table of the classic cells")
    args = parser.parse_args(argv)
    results = Path(args.results)
    if args.auto_table:
        print(auto_table(read_rows(results)))
        return
    if args.tables_only:
        write_outputs(read_rows(results), Path(args.results_md), Path(args.plot))
        return
    groups = {"all": datasets_all, "simulated": list(PROCESSES), "classic": list(CLASSIC)}
    datasets = groups.get(args.datasets) or _list(args.datasets, datasets_all, "dataset(s)")
    lengths = _ints(args.lengths, "lengths", 2)
    seeds = _ints(args.seeds, "seeds", 0)
    models = _list(args.models, MODELS, "model(s)")
    params = parse_params(args.params, models)
    named = (f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in sorted(params.items()))
    label = (args.label or "").strip() or ",".join(named) or "default"
    folder = data_dir(args.data_dir) / "classic"
    if any(d in CLASSIC for d in datasets) and not folder.is_dir():
        print(f"note: {folder} not found; classic series skipped")
        datasets = [d for d in datasets if d in PROCESSES]
    threadpool_limits(1)  # one core: numpy/statsmodels as torch (num_threads=1)
    machine = machine_description()
    done = {tuple(str(v) for v in r) for r in read_rows(results)[list(KEY)].itertuples(index=False)}
    ran = set()  # keys run by this command (a classic series' statistical rows: once, seed 0)
    for dataset in datasets:
        try:
            reached = reached_lengths(dataset, lengths, folder)
        except (OSError, ValueError) as exc:  # a missing or broken file
            fail(f"{dataset}: {exc}")
        if not reached:
            print(f"{dataset}: reaches none of the lengths {lengths}; skipped", flush=True)
        for n in reached:
            for seed in seeds:
                try:
                    cell = make_cell(dataset, n, seed, folder)
                except ValueError as exc:  # a length too short for the horizon
                    fail(f"{dataset}: {exc}")
                for name in models:
                    statistical = name not in NEURAL and name not in ("SeasonalNaive", "Auto")
                    if name.startswith("True") and not cell.simulated:
                        continue
                    row_seed = 0 if (statistical or name == "SeasonalNaive") and not cell.simulated else seed
                    row_label = label if not (statistical or name == "Auto") else "default"
                    key = (dataset, str(n), MODEL_NAMES[name], row_label, str(row_seed))
                    if key in ran or (key in done and not args.force):
                        continue
                    result = (run_anchor(name, cell) if statistical else run_auto(cell, seed) if name == "Auto"
                              else run_forecaster(name, cell, seed, params))
                    row = make_row(cell, name, row_label, row_seed, result, machine)
                    append_row(results, row)
                    ran.add(key)
                    print(f"{dataset} n={n} seed={row_seed} {MODEL_NAMES[name]} [{row_label}]: test MSE "
                          f"{row['test_mse']:.4f} val {row['val_mse']} ({row['train_seconds']} s)", flush=True)


if __name__ == "__main__":
    main()
