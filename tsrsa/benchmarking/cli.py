"""Command line of the long-horizon harness (``benchmarks/ltsf.py`` is a thin wrapper).

    python benchmarks/ltsf.py --dataset ETTh1 --models DLinear --seeds 0,1,2

fits each configured model on each data set, horizon and seed, appends one row per run to
``results/ltsf.csv``, logs the command, and regenerates the tables of ``RESULTS.md``. With
``--jobs k`` the runs go to k worker processes side by side (several small models on one GPU, or
one CPU core each) and the log records the whole command's wall time.
"""
from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tsrsa.benchmarking.configs import load_config
from tsrsa.benchmarking.protocol import LTSF_DATASETS, load_protocol_data
from tsrsa.benchmarking.results import (
    append_rows, log_run, read_results, read_run_log, replace_section, results_tables, runs_summary,
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
    p.add_argument("--variant", default="default",
                   help="variant of each configuration, named by the options it changes, e.g. "
                        "'gate_init=0,learning_rate=1e-3' (one name; default 'default')")
    p.add_argument("--train-fraction", type=float, default=1.0,
                   help="use the most recent fraction of the training windows (default 1.0)")
    p.add_argument("--input-size", type=int, default=None, help="input length (default 96; ILI 36)")
    p.add_argument("--max-windows", type=int, default=None,
                   help="smoke run: at most this many windows per channel in training, validation and test")
    p.add_argument("--max-epochs", type=int, default=None,
                   help="override the configuration's max_epochs (recorded in the variant name)")
    p.add_argument("--num-threads", type=int, default=None,
                   help="torch CPU threads per run (default: torch's; with --jobs, the cores shared out)")
    p.add_argument("--jobs", type=int, default=1,
                   help="runs side by side, each in a worker process (default 1: one after another, in this process)")
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
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    configs = [load_config(name, args.config_dir) for name in args.models]
    tasks = []  # (data set, configuration name, horizon, seed), in the order they are listed
    for dataset in args.dataset:
        if dataset not in LTSF_DATASETS:
            p.error(f"unknown data set {dataset!r}; use one of {', '.join(LTSF_DATASETS)}")
        for config in configs:
            seeds = args.seeds if config.estimator_class().stochastic else args.seeds[:1]
            tasks += [(dataset, config.name, h, seed) for h in args.horizons or LTSF_DATASETS[dataset][1]
                      for seed in seeds]
    threads = args.num_threads
    if threads is None and args.jobs > 1:  # no worker oversubscribes the host's cores (on a GPU too)
        threads = max(1, (os.cpu_count() or 1) // args.jobs)
    run = functools.partial(
        _run_task, config_dir=args.config_dir, input_size=args.input_size, data_dir=args.data_dir,
        variant=args.variant, overrides={"max_epochs": args.max_epochs} if args.max_epochs is not None else None,
        train_fraction=args.train_fraction, max_windows=args.max_windows, num_threads=threads,
        accelerator=args.accelerator)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    rows, began = [], time.perf_counter()

    def record(row: dict) -> None:
        rows.append(row)
        if results is not None:
            append_rows(results, [row])  # as it goes: a long run keeps what it finished
        say(f"{row['dataset']} H{row['horizon']} {row['model']} [{row['variant']}] seed {row['seed']}: "
            f"mse {row['mse']:.4f} mae {row['mae']:.4f} ({row['train_seconds']:.1f} s)")

    try:
        if args.jobs == 1:
            for task in tasks:
                record(run(task))
        else:
            _run_parallel(run, tasks, args.jobs, record)
    finally:  # an interrupted run still records the command and the rows it finished
        if results is not None and rows:
            command = "python benchmarks/ltsf.py " + " ".join(shlex.quote(a) for a in argv)
            log_run(results.with_name("ltsf_runs.jsonl"), command, len(rows),
                    wall_seconds=time.perf_counter() - began)
            write_results_md(results, results_md, args.config_dir)
    return rows


@functools.lru_cache(maxsize=2)
def _protocol_data(dataset: str, input_size: int | None, data_dir: str | None):
    return load_protocol_data(dataset, input_size, data_dir)


def _run_task(task: tuple, *, config_dir, input_size, data_dir, variant, overrides, train_fraction, max_windows,
              num_threads, accelerator) -> dict:
    """One (data set, configuration, horizon, seed) run: its row of ``ltsf.csv``. Runs in a worker
    process under ``--jobs``, so it takes names and paths, never loaded objects."""
    dataset, name, h, seed = task
    config = load_config(name, config_dir)
    return run_one(config, _protocol_data(dataset, input_size, data_dir), h, seed=seed,
                   variant=variant, overrides=overrides, train_fraction=train_fraction, max_windows=max_windows,
                   num_threads=num_threads, accelerator=accelerator)


def _run_parallel(run, tasks: list, jobs: int, record) -> None:
    """``run`` every task in ``jobs`` spawned worker processes (spawn: safe with CUDA and threads),
    recording each row as it finishes; on an error or an interrupt the runs not yet started are
    cancelled and the error raised once the running ones stop."""
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)) or 1,
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        for future in as_completed([pool.submit(run, task) for task in tasks]):
            record(future.result())
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def write_results_md(results: Path, results_md: Path, config_dir: Path | None = None) -> None:
    """Regenerate the long-horizon tables of ``results_md`` from ``results``, the configurations of
    the models it holds and a summary of its run log (the log itself is linked, not copied)."""
    df = read_results(results)
    body = [PROTOCOL, results_tables(df)]
    if config_dir is not None and not df.empty:
        body.append(configs_list(config_dir, set(df["model"])))
    log = results.with_name("ltsf_runs.jsonl")
    runs = read_run_log(log)
    if runs:
        link = Path(os.path.relpath(log, Path(results_md).parent)).as_posix()
        body += ["#### Runs\n", runs_summary(runs, link)]
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
        variants = ", ".join(f"`{name}`" for name in config.variants)
        lines.append(f"- **{path.stem}** (`{config.estimator}`, default: {params}"
                     + (f"; variants: {variants}" if variants else "") + f"). {notes}")
    return "\n".join(lines) + "\n"
