"""Distributed prediction: series per second of a saved model's predict on Dask workers and in one process.

    python benchmarks/distributed_predict.py --sizes 10000,100000
    python benchmarks/distributed_predict.py --sizes 1000000 --models DLinear --single-max 1000000

A small model (``--models``: DLinear and a one-layer RSA) is fitted once on ``--fit-series`` series
and saved; then for each size N a long frame of N series of ``--steps`` steps (int64 ids, hourly
timestamps, float64 values) is forecast

(a) in this process, ``tsrsa.load(path).predict(df=frame)`` with ``--single-threads`` torch threads
    (default: one per logical core, set explicitly: starting a ``LocalCluster`` sets
    ``OMP_NUM_THREADS=1`` in this process, before torch is imported), where N is at most ``--single-max``;
(b) by ``tsrsa.integrations.dask.predict_partitions`` on a ``distributed.LocalCluster`` of ``--workers``
    processes of one thread each, the time including the split of the frame into partitions, its
    transfer to the workers and the gathering of the result (the workers have read the model before
    the clock starts).

Each timing is the best of ``--repeats`` calls. Where both ran, their forecasts are compared
(``equal``). Each finished run appends one row to ``benchmarks/results/distributed_predict.csv`` at
once (date, machine, command, the explicit parameters); the section "distributed-predict" of
RESULTS.md is made from that file (the latest row of each model, size and mode).
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.results import explicit_params, machine_description, replace_section, row_writer  # noqa: E402
from tsrsa.integrations.dask import predict_partitions  # noqa: E402

RESULTS = HERE / "results" / "distributed_predict.csv"
COLUMNS = ("date", "machine", "model", "n_series", "steps", "fit_series", "mode", "workers", "threads",
           "n_partitions", "repeats", "seconds", "series_per_second", "rows", "equal", "load_average", "command",
           "params")
MODELS = {
    "DLinear": lambda: tsrsa.DLinearForecaster(h=8, input_size=32, max_epochs=1, random_state=0,
                                                 trainer={"num_threads": 1}),
    "RSA": lambda: tsrsa.RSAForecaster(h=8, input_size=32, d_model=16, n_heads=4, n_layers=1, d_ff=32,
                                       max_epochs=1, random_state=0, trainer={"num_threads": 1}),
}


def series_frame(n: int, steps: int, seed: int = 0) -> pd.DataFrame:
    """``n`` daily-seasonal hourly series of ``steps`` steps, each with its own level and phase."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps)[None, :]
    level = rng.uniform(5.0, 50.0, n)[:, None]
    phase = rng.integers(0, 24, n)[:, None]
    y = level + level / 5 * np.sin(2 * np.pi * (t + phase) / 24) + rng.standard_normal((n, steps))
    times = pd.date_range("2024-01-01", periods=steps, freq="h").to_numpy()
    return pd.DataFrame({"unique_id": np.repeat(np.arange(n, dtype=np.int64), steps), "ds": np.tile(times, n),
                         "y": y.ravel()})


def run(sizes: list[int], models: list[str], client, *, steps: int = 64, fit_series: int = 300,
        single_max: int = 1_000_000, single_threads: int | None = None, repeats: int = 1,
        n_partitions: int | None = None, output: Path = RESULTS, command: str = "") -> list[dict]:
    """Fit, save and time each model at each size (module docstring), the best of ``repeats`` calls;
    returns the rows written."""
    import torch

    write = row_writer(output, COLUMNS)
    threads = single_threads or os.cpu_count() or 1
    workers = len(client.nthreads())
    rows = []
    with tempfile.TemporaryDirectory(prefix="distributed-predict-") as folder:
        for name in models:
            model = MODELS[name]().fit(series_frame(fit_series, steps, seed=0))
            path = Path(folder) / name
            model.save(path)
            warm = series_frame(4 * workers, steps, seed=1)
            predict_partitions(path, warm, client=client, n_partitions=2 * workers)  # workers import and load
            base = {"model": name, "steps": steps, "fit_series": fit_series, "repeats": repeats,
                    "command": command, "params": explicit_params(model)}
            for n in sizes:
                frame = series_frame(n, steps, seed=2)
                single = None
                if n <= single_max:
                    before = torch.get_num_threads()
                    torch.set_num_threads(threads)  # the LocalCluster set OMP_NUM_THREADS=1 here
                    try:
                        seconds, single = best_of(repeats, lambda: tsrsa.load(path).predict(df=frame))
                    finally:
                        torch.set_num_threads(before)
                    rows.append(_row(write, base, n, "one process", 1, threads, None, seconds, len(single), None))
                seconds, spread = best_of(repeats, lambda: predict_partitions(path, frame, client=client,
                                                                              n_partitions=n_partitions))
                equal = None if single is None else bool(np.allclose(spread["yhat"], single["yhat"], rtol=1e-6)
                                                          and spread["unique_id"].equals(single["unique_id"]))
                rows.append(_row(write, base, n, "dask", workers, 1, n_partitions, seconds, len(spread), equal))
                del frame, single, spread
                gc.collect()
    return rows


def best_of(repeats: int, call) -> tuple[float, object]:
    """The shortest wall time of ``repeats`` calls, and the last call's result."""
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return min(times), out


def _row(write, base: dict, n: int, mode: str, workers: int, threads: int, n_partitions, seconds: float,
         n_rows: int, equal) -> dict:
    row = {"date": dt.date.today().isoformat(), "machine": machine_description(), "n_series": n, "mode": mode,
           "workers": workers, "threads": threads, "n_partitions": "auto" if n_partitions is None else n_partitions,
           "seconds": round(seconds, 3), "series_per_second": round(n / seconds, 1), "rows": n_rows,
           "equal": "" if equal is None else equal, "load_average": round(os.getloadavg()[0], 2), **base}
    write(row)
    return row


def cell(row) -> str:
    return "not run" if row is None else f"{row['seconds']:,.2f} ({row['series_per_second']:,.0f})"


def section(results: pd.DataFrame) -> str:
    """The RESULTS.md text: the latest row of each (model, size, mode), side by side."""
    latest = results.drop_duplicates(["model", "n_series", "mode"], keep="last")
    dask, single = latest[latest["mode"] == "dask"], latest[latest["mode"] == "one process"]
    workers = int(dask["workers"].max())
    lines = [f"| model | series | one process: s (series/s) | Dask, {workers} workers: s (series/s) | Dask against "
             f"one process | same forecasts |", "|---|---:|---:|---:|---:|---|"]
    ratios = []
    for (model, n), group in latest.groupby(["model", "n_series"], sort=True):
        cells = {mode: group[group["mode"] == mode].iloc[0] for mode in group["mode"]}
        one, spread = cells.get("one process"), cells.get("dask")
        if one is not None and spread is not None:
            ratios.append(one["seconds"] / spread["seconds"])
        ratio = f"{ratios[-1]:.2f}× as fast" if one is not None and spread is not None else ""
        same = "" if spread is None else {"True": "yes", "False": "**no**"}.get(str(spread["equal"]), "")
        lines.append(f"| {model} | {n:,} | {cell(one)} | {cell(spread)} | {ratio} | {same} |")
    first = latest.iloc[-1]
    one_threads = ", ".join(sorted(set(single["threads"].astype(str)))) or "no"
    chosen = sorted(set(dask["n_partitions"].astype(str)))
    partitions = ("partitions: the function's default, one per worker thread and at most 100,000 series each"
                  if chosen == ["auto"] else f"n_partitions={', '.join(chosen)}")
    best = "; ".join(f"best of {int(r)} call{'s' if r > 1 else ''} at {', '.join(f'{n:,}' for n in sorted(sizes))} "
                     f"series" for r, sizes in latest.groupby("repeats")["n_series"].unique().items())
    reading = ("" if not ratios else
               f"Here the Dask call ran at {min(ratios):.2f}–{max(ratios):.2f}× the speed of one process: the "
               f"one process already uses every core through torch's threads, and the Dask call adds the split, "
               f"serialisation and transfer of the frame and of the forecasts. ")
    low, high = latest["load_average"].min(), latest["load_average"].max()
    if low >= 1.0:
        machine = (f"**A shared machine**: {first['machine']}; other processes ran beside these (1-minute load "
                   f"average {low:.1f}–{high:.1f} on its {os.cpu_count()} cores at the runs), so the workers and "
                   f"the single process each got part of the cores: times on a busy machine, not clean speed-ups.")
    else:
        machine = f"{first['machine']}, otherwise idle (1-minute load average {low:.1f}–{high:.1f})."
    return (
        f"Forecasts of a saved model for N series of {int(first['steps'])} hourly steps (a long frame with int64 "
        f"ids), in one process (`tsrsa.load(path).predict(df=frame)`, {one_threads} torch threads) and by "
        f"`tsrsa.integrations.dask.predict_partitions` on a `distributed.LocalCluster` of {workers} worker "
        f"processes of one thread each ({partitions}). The Dask time includes splitting the frame by series, "
        f"sending it to the workers and gathering the forecasts; the workers had read the model before the "
        f"clock started. Each model was fitted once on {int(first['fit_series'])} series (one epoch); {best}. "
        f"*Same forecasts*: both results hold the same ids in the same order and `yhat` within 1e-6.\n\n"
        + "\n".join(lines) + "\n\n"
        f"{reading}{machine} With the data on the client, the split and the transfer are paid in every call "
        f"and grow with N like the forecast itself.\n\n"
        f"**A projection, not a measurement**: on a cluster, where each worker has a core of its own and "
        f"reads its partitions itself (a dask frame, e.g. `dd.read_parquet`, so that the client sends "
        f"nothing), the throughput would be about one worker's rate times the number of workers; nothing "
        f"here measured that.\n\nMeasured {' to '.join(sorted(set(latest['date'].astype(str))))}; commands: "
        + "; ".join(f"`{c}`" for c in dict.fromkeys(latest["command"]))
    )


def write_section(output: Path = RESULTS) -> None:
    results = pd.read_csv(output, keep_default_na=False, na_values=[""])
    replace_section(HERE / "RESULTS.md", "distributed-predict", section(results),
                    title="Distributed prediction on Dask")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated numbers of series")
    parser.add_argument("--models", default="DLinear,RSA", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--fit-series", type=int, default=300)
    parser.add_argument("--single-max", type=int, default=1_000_000,
                        help="the largest N also forecast in one process")
    parser.add_argument("--single-threads", type=int, default=None,
                        help="torch threads of the one-process run (default: one per logical core)")
    parser.add_argument("--repeats", type=int, default=1, help="calls per timing; the best is kept")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=None, help="n_partitions (default: the function's)")
    parser.add_argument("--no-write", action="store_true", help="leave RESULTS.md as it is")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {sorted(MODELS)}")
    command = "python benchmarks/distributed_predict.py " + " ".join(sys.argv[1:] if argv is None else argv)
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, Client(cluster) as client:
        run(sizes, models, client, steps=args.steps, fit_series=args.fit_series, single_max=args.single_max,
            single_threads=args.single_threads, repeats=args.repeats, n_partitions=args.partitions,
            command=command.strip())
    if not args.no_write:
        write_section()


if __name__ == "__main__":
    main()
