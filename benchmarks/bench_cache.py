"""Bounded key/value caches while streaming: test error against the cache size, per eviction policy.

    python benchmarks/bench_cache.py --dataset ETTh1,ETTm1 --models Transformer,RSA --seeds 0,1,2
    python benchmarks/bench_cache.py --tables-only
    python benchmarks/bench_cache.py --dataset ETTh1 --seeds 0 --input-size 256 --max-epochs 4 --policies sinks

A streaming forecaster (the model's benchmark configuration with ``stream=True``) is trained with
windows of N tokens (``--input-size`` steps in patches of ``--patch-len``; default 512 steps in
patches of 4, N = 128) on the long-horizon protocol (Time-Series-Library's splits), then reads
each channel's whole history token by token as ``update()`` serves it, every test window
forecast from the state after the row before it (``tsrsa.benchmarking.scoring.score_streamed``),
once per cache: unbounded, and k ∈ {N/16, N/8, N/4, N/2, N} tokens under each policy ("window",
"sinks", "h2o", "tova"). One fit per (data set, model, seed); the caches change only how the fitted
network streams. The reference is ``window`` at k = N: the model reading exactly the context it
was trained on. Rows go to ``benchmarks/results/cache.csv`` as each stream ends; the RESULTS.md
section "kv-cache" gives the MSE relative to that reference. Update cost and memory against the
history's length: the section "streaming-speed" (``bench_streaming.py --cache SIZE:POLICY``).

Cost: the streaming configuration trains every token to forecast through a head over the N tokens
before it: on one CPU thread an epoch of ETTh1 at N = 64 takes about 14 minutes, and at N = 128
one epoch and part of the next took 80 minutes. ``--input-size 256 --max-epochs 4`` is the cut
that fits a CPU session; each row records what it ran.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
CSV = HERE / "results" / "cache.csv"
COLUMNS = ("date", "dataset", "horizon", "model", "seed", "tokens", "policy", "cache_size", "mse", "mae",
           "stream_seconds", "val_loss", "params")
POLICIES = ("window", "sinks", "h2o", "tova")
FRACTIONS = (16, 8, 4, 2, 1)  # k = N / fraction


def bound(model, size: int | None, policy: str = "window", sinks: int = 4) -> None:
    """Give every softmax branch of a fitted streaming model the cache (size, policy); None: unbounded.
    The weights are left as they are: only how the network streams changes."""
    from tsrsa.nn.kv_cache import CacheSpec

    spec = CacheSpec(size, policy, min(sinks, size - 1) if size is not None and policy == "sinks" else sinks)
    for block in model.network_.blocks:
        block.attn.cache = spec


def caches(n_tokens: int, policies=("unbounded", *POLICIES)) -> list[tuple[str, int | None]]:
    """(policy, k) of the grid: unbounded first, then each policy at N/16 ... N (only ``policies``)."""
    unknown = set(policies) - {"unbounded", *POLICIES}
    if unknown:
        raise ValueError(f"unknown cache policies {sorted(unknown)}; choose from {('unbounded', *POLICIES)}")
    sizes = sorted({max(2, n_tokens // f) for f in FRACTIONS})
    grid = [("unbounded", None)] + [(p, k) for p in POLICIES for k in sizes]
    return [(p, k) for p, k in grid if p in policies]


def run_model(data, model: str, h: int, seed: int, *, input_size: int, patch_len: int, num_threads: int | None = 1,
              params: dict | None = None, configs=HERE / "configs", write=None, max_windows: int | None = None,
              policies=("unbounded", *POLICIES)):
    """Fit once, then score the streamed test windows under every cache of the grid (of ``policies``);
    ``write(row)`` sees each row as it is made. Returns the rows."""
    from tsrsa.benchmarking.configs import load_config
    from tsrsa.benchmarking.protocol import fit_frame, validation_size
    from tsrsa.benchmarking.results import explicit_params
    from tsrsa.benchmarking.runner import best_val_loss, build_estimator
    from tsrsa.benchmarking.scoring import score_streamed

    write = write or (lambda row: None)
    config = load_config(model, configs)
    v = validation_size(data, h)
    overrides = {"stream": True, "input_size": input_size, "patch_len": patch_len, **(params or {})}
    estimator = build_estimator(config, data, h, seed=seed, overrides=overrides, val_size=v, num_threads=num_threads)
    estimator.fit(fit_frame(data, 0, data.borders.train_end + v))
    n_tokens = input_size // patch_len
    rows = []
    for policy, size in caches(n_tokens, policies):
        bound(estimator, size, "window" if size is None else policy)
        began = time.perf_counter()
        score = score_streamed(estimator, data, h, max_windows=max_windows)
        rows.append({"date": datetime.date.today().isoformat(), "dataset": data.name, "horizon": h,
                     "model": type(estimator).__name__, "seed": seed, "tokens": n_tokens, "policy": policy,
                     "cache_size": "" if size is None else size, "mse": round(score.mse, 6),
                     "mae": round(score.mae, 6), "stream_seconds": round(time.perf_counter() - began, 1),
                     "val_loss": round(best_val_loss(estimator), 6), "params": explicit_params(estimator)})
        write(rows[-1])
    bound(estimator, None)
    return rows


def table(path: Path) -> str:
    import numpy as np
    import pandas as pd

    runs = pd.read_csv(path)
    # what each fit ran: fits of another input, patch length or budget are tabled apart, never pooled
    runs["fit"] = [", ".join(f"{key} {ran.get(key)}" for key in ("input_size", "patch_len", "max_epochs"))
                   for ran in map(json.loads, runs["params"])]
    runs = runs.drop_duplicates(["dataset", "horizon", "model", "fit", "seed", "tokens", "policy", "cache_size"],
                                keep="last")
    out = []
    for (dataset, h, model, n, fit), part in runs.groupby(["dataset", "horizon", "model", "tokens", "fit"]):
        reference = part[(part.policy == "window") & (part.cache_size == n)].set_index("seed")["mse"]
        if reference.empty:
            continue
        sizes = sorted(int(k) for k in part["cache_size"].dropna().unique())
        lines = [f"**{dataset}, H{h}, {model.replace('Forecaster', '')}, N = {int(n)} tokens** ({fit}"
                 f"; seeds {', '.join(map(str, sorted(reference.index)))}; reference `window` at k = N: MSE "
                 f"{reference.mean():.4f})", "",
                 "| cache | " + " | ".join(f"k = {k}" for k in sizes) + " |", "|---|" + "---|" * len(sizes)]
        for policy in ["unbounded", *POLICIES]:
            rows = part[part.policy == policy]
            if rows.empty:
                continue
            cells = []
            for k in ([None] * len(sizes) if policy == "unbounded" else sizes):
                cell = rows if k is None else rows[rows.cache_size == k]
                cell = cell.set_index("seed")["mse"]
                seeds = sorted(set(cell.index) & set(reference.index))
                ratio = np.exp(np.mean(np.log(cell[seeds] / reference[seeds]))) if seeds else float("nan")
                cells.append(f"{ratio:.3f}" if seeds else "")
                if k is None:
                    cells = [cells[0]] + [""] * (len(sizes) - 1)
                    break
            lines.append(f"| {policy} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    dates = ", ".join(sorted(runs["date"].astype(str).unique()))
    return ("Test MSE of the streamed windows relative to the reference (geometric mean over the seeds), per "
            "eviction policy and cache size k (tokens a query attends to, itself included); *unbounded*: every "
            "token kept (in its first column). A model trained with windows of N tokens reads each channel's whole "
            "history token by token.\n\n" + "\n\n".join(out) + "\n\n"
            f"Made by `python benchmarks/bench_cache.py` on {dates}; every row's parameters are in "
            f"`benchmarks/results/cache.csv`.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ETTh1,ETTm1")
    parser.add_argument("--models", default="Transformer,RSA")
    parser.add_argument("--horizons", default="96")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--input-size", type=int, default=512)
    parser.add_argument("--patch-len", type=int, default=4)
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--max-epochs", type=int, default=None,
                        help="cap the configuration's epochs (a shorter budget for a CPU; recorded in each row)")
    parser.add_argument("--policies", default=",".join(("unbounded", *POLICIES)),
                        help="the rows of the grid to stream (a fit's other rows are left as they are in the csv)")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    if args.input_size % args.patch_len:
        parser.error(f"--input-size {args.input_size} must be a multiple of --patch-len {args.patch_len}")
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    from tsrsa.benchmarking.protocol import load_protocol_data
    from tsrsa.benchmarking.results import replace_section, row_writer

    write = row_writer(CSV, COLUMNS)

    if not args.tables_only:
        for dataset in args.dataset.split(","):
            data = load_protocol_data(dataset, input_size=args.input_size)
            for h in (int(x) for x in args.horizons.split(",")):
                for seed in (int(x) for x in args.seeds.split(",")):
                    for model in args.models.split(","):
                        run_model(data, model, h, seed, input_size=args.input_size, patch_len=args.patch_len,
                                  num_threads=args.num_threads, write=write, policies=args.policies.split(","),
                                  params=None if args.max_epochs is None else {"max_epochs": args.max_epochs})
    if CSV.exists():
        replace_section(HERE / "RESULTS.md", "kv-cache", table(CSV),
                        title="Bounded caches: streamed test error against the cache size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
