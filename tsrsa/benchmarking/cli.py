"""Command line of the long-horizon harness (``benchmarks/ltsf.py`` is a thin wrapper).

    python benchmarks/ltsf.py --dataset ETTh1 --models DLinear --seeds 0,1,2

fits each configured model on each data set, horizon and seed, appends one row per run to
``results/ltsf.csv``, logs the command, and regenerates the tables of ``RESULTS.md``.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from tsrsa.benchmarking.configs import load_config
from tsrsa.benchmarking.protocol import LTSF_DATASETS, load_protocol_data
from tsrsa.benchmarking.results import (
    append_rows, log_run, read_results, read_run_log, replace_section, results_tables, runs_table,
)
from tsrsa.benchmarking.runner import run_one

SECTION = "ltsf-results"


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def parser(root: Path) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ltsf", description="Long-horizon benchmark (Time-Series-Library protocol): fit, score, record.")
    p.add_argument("--dataset", type=_names, default=[],
                   help=f"comma-separated data sets: {', '.join(LTSF_DATASETS)}")
    p.add_argument("--models", type=_names, default=[],
                   help="comma-separated configuration names (files in --config-dir, e.g. DLinear,LSTM)")
    p.add_argument("--horizons", type=_ints, default=None,
                   help="comma-separated horizons (default 96,192,336,720; ILI 24,36,48,60)")
    p.add_argument("--seeds", type=_ints, default=[0], help="comma-separated seeds (default 0)")
    p.add_argument("--variant", default="default", help="named variant of the configuration (default 'default')")
    p.add_argument("--train-fraction", type=float, default=1.0,
                   help="use the most recent fraction of the training windows (default 1.0)")
    p.add_argument("--input-size", type=int, default=None, help="input length (default 96; ILI 36)")
    p.add_argument("--max-windows", type=int, default=None,
                   help="smoke run: at most this many windows per channel in training, validation and test")
    p.add_argument("--max-epochs", type=int, default=None,
                   help="override the configuration's max_epochs (recorded in the variant name)")
    p.add_argument("--num-threads", type=int, default=None, help="torch CPU threads per run")
    p.add_argument("--accelerator", default="cpu", help="cpu (default), gpu, cuda, mps or auto")
    p.add_argument("--data-dir", default=None, help="folder with the CSV files (else $TSRSA_DATA_DIR)")
    p.add_argument("--config-dir", type=Path, default=root / "configs")
    p.add_argument("--results", type=Path, default=None,
                   help=f"results CSV (default {root / 'results' / 'ltsf.csv'}; a --max-windows run writes "
                        f"only where this is given)")
    p.add_argument("--results-md", type=Path, default=None,
                   help="RESULTS.md to regenerate (default: RESULTS.md beside the results folder)")
    p.add_argument("--tables-only", action="store_true",
                   help="run nothing: regenerate the tables of RESULTS.md from the results CSV")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def main(argv: list[str] | None = None, *, root: Path | str = Path("benchmarks")) -> list[dict]:
    """Run the benchmark described by ``argv``; returns the rows it produced."""
    root = Path(root)
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser(root)
    args = p.parse_args(argv)
    smoke = args.max_windows is not None
    results = args.results if args.results is not None else (None if smoke else root / "results" / "ltsf.csv")
    results_md = args.results_md or (results.parent.parent / "RESULTS.md" if results is not None else None)
    if args.tables_only:
        if results is None:
            p.error("--tables-only needs --results with --max-windows")
        write_results_md(results, results_md, args.config_dir)
        return []
    if not args.dataset or not args.models:
        p.error("--dataset and --models are required (or --tables-only)")
    configs = [load_config(name, args.config_dir) for name in args.models]
    overrides = {"max_epochs": args.max_epochs} if args.max_epochs is not None else None
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    rows = []
    try:
        for dataset in args.dataset:
            data = load_protocol_data(dataset, args.input_size, args.data_dir)
            horizons = args.horizons or LTSF_DATASETS[dataset][1]
            for config in configs:
                stochastic = config.estimator_class()._stochastic
                for h in horizons:
                    for seed in (args.seeds if stochastic else args.seeds[:1]):
                        row = run_one(config, data, h, seed=seed, variant=args.variant, overrides=overrides,
                                      train_fraction=args.train_fraction, max_windows=args.max_windows,
                                      num_threads=args.num_threads, accelerator=args.accelerator)
                        rows.append(row)
                        if results is not None:
                            append_rows(results, [row])  # as it goes: a long run keeps what it finished
                        say(f"{dataset} H{h} {row['model']} [{row['variant']}] seed {seed}: "
                            f"mse {row['mse']:.4f} mae {row['mae']:.4f} ({row['train_seconds']:.1f} s)")
    finally:  # an interrupted run still records the command and the rows it finished
        if results is not None and rows:
            command = "python benchmarks/ltsf.py " + " ".join(shlex.quote(a) for a in argv)
            log_run(results.with_name("ltsf_runs.jsonl"), command, len(rows))
            write_results_md(results, results_md, args.config_dir)
    return rows


def write_results_md(results: Path, results_md: Path, config_dir: Path | None = None) -> None:
    """Regenerate the long-horizon tables of ``results_md`` from ``results``, its run log and the
    configurations of the models it holds."""
    df = read_results(results)
    body = [PROTOCOL, results_tables(df)]
    if config_dir is not None and not df.empty:
        body.append(configs_list(config_dir, set(df["model"])))
    runs = read_run_log(results.with_name("ltsf_runs.jsonl"))
    if runs:
        body += ["#### Runs (date, machine, command)\n", runs_table(runs)]
    replace_section(results_md, SECTION, "\n".join(body), title="Long-horizon benchmark (LTSF)")


PROTOCOL = """Time-Series-Library protocol (`tsrsa.benchmarking`): ETTh train rows [0, 8640), validation
[8640 − L, 11520), test [11520 − L, 14400) (ETTm ×4; weather, exchange_rate, national_illness 70/10/20),
StandardScaler per channel fitted on the training rows, multivariate (every channel forecast,
channel-independent models see each channel as a series), MSE/MAE on the scaled data over every
stride-1 test window, horizon step and channel. Models fit the training rows with the validation rows
held out (`val_size`), early stopping on them, best epoch kept. Regenerate these tables with
`python benchmarks/ltsf.py --tables-only`.
"""


def configs_list(config_dir: Path, estimators: set[str]) -> str:
    """One line per configuration file whose estimator has rows: its notes and parameters."""
    lines = ["#### Configurations (`benchmarks/configs/`)\n"]
    for path in sorted(Path(config_dir).glob("*.json")):
        config = load_config(path.stem, config_dir)
        if config.estimator not in estimators:
            continue
        notes = json.loads(path.read_text()).get("notes", "")
        params = ", ".join(f"{k}={v}" for k, v in config.params.items()) or "library defaults"
        lines.append(f"- **{path.stem}** (`{config.estimator}`, default variant: {params}). {notes}")
    return "\n".join(lines) + "\n"
