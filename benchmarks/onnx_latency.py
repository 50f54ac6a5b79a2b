"""Forecast latency: a fitted model's ``predict`` on torch against its ONNX export on onnxruntime.

    python benchmarks/onnx_latency.py [--repeats 30] [--series 1 1000] [--docs] [--from-csv]

For RSAForecaster (its defaults: d_model 64, 2 layers, patch_len 4) and DLinearForecaster, h=24 and
input_size=96, fitted for one epoch (latency does not depend on training), one thread on each side
(``torch.set_num_threads(1)``, the trainer's ``num_threads=1``; onnxruntime's ``intra_op_num_threads=1``):

- ``predict``: ``model.predict(df=frame)`` against ``tsrsa.load_onnx(path).predict(df=frame)``, a frame of
  ``series`` series of ``input_size`` steps each (validation, scaling, the network, the forecast frame);
- ``network``: the forward pass alone, ``network_(x)`` under ``torch.no_grad()`` against the session's
  ``run`` on the same windows (the graph holds the scaling too);
- ``load``: ``tsrsa.load(folder)`` (a saved model) against ``tsrsa.load_onnx(path)``, in this process
  after a first load (imports done).

Median of ``--repeats`` calls after one warm-up (a fifth of them, at least 3, for 1,000 series). Writes
``benchmarks/results/onnx_latency.csv`` (with the date, versions and parameters) and prints the table;
``--docs`` also writes it into docs/serving.md between its ``onnx-latency`` markers; ``--from-csv`` only
prints (and with ``--docs`` writes) the table of the CSV, measuring nothing. The machine's load average
at the start is recorded: on a shared machine the medians carry its noise.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "onnx_latency.csv"
DOCS = HERE.parent / "docs" / "serving.md"
COMMAND = "python benchmarks/onnx_latency.py --repeats 30 --series 1 1000 --docs"
H, INPUT_SIZE = 24, 96


def frame(n_series: int, length: int, seed: int = 0) -> pd.DataFrame:
    """``n_series`` hourly series of ``length`` steps: daily cycles of different levels and spreads."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    ids = np.repeat([f"s{i}" for i in range(n_series)], length)
    level = np.repeat(rng.uniform(0, 100, n_series), length)
    spread = np.repeat(rng.uniform(1, 10, n_series), length)
    y = level + spread * np.sin(2 * np.pi * np.tile(t, n_series) / 24) + rng.normal(size=n_series * length)
    ds = np.tile(pd.date_range("2024-01-01", periods=length, freq="h"), n_series)
    return pd.DataFrame({"unique_id": ids, "ds": ds, "y": y})


def median_ms(call, repeats: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def models():
    from tsrsa import DLinearForecaster, RSAForecaster

    common = {"h": H, "input_size": INPUT_SIZE, "max_epochs": 1, "random_state": 0, "trainer": {"num_threads": 1}}
    return {"RSAForecaster": lambda: RSAForecaster(**common), "DLinearForecaster": lambda: DLinearForecaster(**common)}


def measure(name: str, make, series: list[int], repeats: int, folder: Path) -> list[dict]:
    import torch

    import tsrsa
    from tsrsa.data.validation import build_panel

    model = make().fit(frame(8, 400))
    path = model.to_onnx(folder / f"{name}.onnx")
    model.save(folder / name)
    served = tsrsa.load_onnx(path, threads=1)
    rows = []

    def row(call: str, n: int, engine: str, ms: float, reps: int) -> None:
        rows.append({"model": name, "call": call, "series": n, "engine": engine, "median_ms": round(ms, 3),
                     "repeats": reps})

    for n in series:
        reps = repeats if n < 100 else max(3, repeats // 5)
        df = frame(n, INPUT_SIZE, seed=1)
        row("predict", n, "torch", median_ms(lambda: model.predict(df=df), reps), reps)
        row("predict", n, "onnxruntime", median_ms(lambda: served.predict(df=df), reps), reps)
        memory = served.memory.for_new_data(build_panel(df, model.frame_spec), INPUT_SIZE, model.scaler)
        x = torch.from_numpy(((memory.tails - memory.loc[:, None]) / memory.scale[:, None]).astype(np.float32))
        network = model.network_.eval()

        def forward():
            with torch.no_grad():
                network(x)

        row("network", n, "torch", median_ms(forward, reps), reps)
        row("network", n, "onnxruntime",
            median_ms(lambda: served.forecast_arrays(memory.tails, memory.loc, memory.scale), reps), reps)
    row("load", 8, "torch", median_ms(lambda: tsrsa.load(folder / name), repeats), repeats)
    row("load", 8, "onnxruntime", median_ms(lambda: tsrsa.load_onnx(path, threads=1), repeats), repeats)
    size = sum(os.path.getsize(p) for p in folder.glob(f"{name}.onnx*"))
    for r in rows:
        r["onnx_bytes"] = size
    return rows


def table(results: pd.DataFrame) -> str:
    """The markdown table: one row per model, call and series; torch, onnxruntime and their ratio."""
    wide = results.pivot_table(index=["model", "call", "series"], columns="engine", values="median_ms",
                               sort=False).reset_index()
    lines = ["| model | call | series | torch (ms) | onnxruntime (ms) | torch / onnxruntime |",
             "|---|---|---:|---:|---:|---:|"]
    for _, r in wide.iterrows():
        lines.append(f"| {r['model']} | {r['call']} | {r['series']:,} | {r['torch']:.2f} | {r['onnxruntime']:.2f} | "
                     f"{r['torch'] / r['onnxruntime']:.1f}x |")
    first = results.iloc[0]
    lines.append("")
    load = f", load average {first['load_average']} at the start" if "load_average" in results else ""
    lines.append(f"Median of {first['repeats']} calls (a fifth of them, at least 3, for 100 series or more), one "
                 f"thread each side; {first['machine']}{load}; torch {first['torch']}, onnxruntime "
                 f"{first['onnxruntime']}; {first['date']}. `{COMMAND}`")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--series", type=int, nargs="+", default=[1, 1000])
    parser.add_argument("--models", nargs="+", default=["RSAForecaster", "DLinearForecaster"])
    parser.add_argument("--docs", action="store_true", help="write the table into docs/serving.md")
    parser.add_argument("--from-csv", action="store_true", help="the table of the CSV, measuring nothing")
    args = parser.parse_args(argv)
    if args.from_csv:
        return report(pd.read_csv(RESULTS), args.docs)
    import onnxruntime
    import torch

    load = os.getloadavg()[0]

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, make in models().items():
            if name in args.models:
                rows += measure(name, make, args.series, args.repeats, Path(folder))
    results = pd.DataFrame(rows)
    results["h"], results["input_size"], results["threads"] = H, INPUT_SIZE, 1
    results["date"] = datetime.date.today().isoformat()
    results["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    results["load_average"] = round(load, 1)
    results["torch"], results["onnxruntime"] = torch.__version__, onnxruntime.__version__
    RESULTS.parent.mkdir(exist_ok=True)
    results.to_csv(RESULTS, index=False)
    report(results, args.docs)


def report(results: pd.DataFrame, docs: bool) -> None:
    """Print the table; with ``docs``, write it into docs/serving.md."""
    text = table(results)
    print(text)
    if docs:
        from tsrsa.benchmarking.results import replace_section

        replace_section(DOCS, "onnx-latency", text)


if __name__ == "__main__":
    main()
