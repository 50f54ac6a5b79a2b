"""Forecast latency: a fitted model's ``predict`` on torch against its ONNX export on onnxruntime.

    python benchmarks/onnx_latency.py [--repeats 30] [--series 1 1000] [--docs] [--from-csv]
    python benchmarks/onnx_latency.py --streams [--repeats 30] [--kinds NAME ...] [--docs] [--from-csv]

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

``--streams``: the streaming kinds' exported one-token step instead (``stream_kinds``: a bounded softmax
cache, RSA with a bounded "tova" cache, fast weights with the delta rule, linear attention and RSA with
T2R features, and the default unbounded caches of softmax attention and RSA, whose step reads the 100
tokens of 400 steps), each ``stream=True, patch_len=4`` at the transformer's defaults otherwise
(d_model 64, 2 layers), h=24, input_size=96, fitted for one epoch on 8 series, one series timed
(``--kinds``: only the kinds named, the other rows kept from the CSV):

- ``export``: ``model.to_onnx(path)`` (seconds, once: torch's exporter);
- ``step``: one token (``patch_len`` new steps) through ``network_.stream`` under ``torch.no_grad()`` against
  the session's ``run`` of the step graph, from a state that has streamed 400 steps (the caches full);
- ``update``: ``model.update(chunk)`` against ``load_onnx(path).update(chunk)`` for a chunk of one token of
  one series (validation, scaling, the step, the stored forecast), then ``predict()`` not included.

Writes ``benchmarks/results/onnx_stream_latency.csv`` and, with ``--docs``, the table between docs/serving.md's
``onnx-stream-latency`` markers.
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
STREAM_RESULTS = HERE / "results" / "onnx_stream_latency.csv"
STREAM_COMMAND = "python benchmarks/onnx_latency.py --streams --repeats 30 --docs"
H, INPUT_SIZE = 24, 96
PATCH_LEN, HISTORY = 4, 400


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


def stream_kinds():
    """The streaming configurations timed by ``--streams``: name -> a function making the unfitted model."""
    from tsrsa import RSAForecaster, TransformerForecaster

    common = {"h": H, "input_size": INPUT_SIZE, "stream": True, "patch_len": PATCH_LEN, "max_epochs": 1,
              "random_state": 0, "trainer": {"num_threads": 1}}
    cache = INPUT_SIZE // PATCH_LEN  # k = N: the training context's tokens
    return {
        "softmax, cache window": lambda: TransformerForecaster(
            **common, attention_options={"cache_size": cache, "cache_policy": "window"}),
        "rsa, cache tova": lambda: RSAForecaster(**common, attention_options={"cache_size": cache,
                                                                               "cache_policy": "tova"}),
        "fast_weight (delta)": lambda: TransformerForecaster(**common, attention="fast_weight"),
        "linear": lambda: TransformerForecaster(**common, attention="linear"),
        "rsa, t2r": lambda: RSAForecaster(**common, attention_options={"t2r_features": 16}),
        "softmax, unbounded": lambda: TransformerForecaster(**common),
        "rsa, unbounded": lambda: RSAForecaster(**common),
    }


def measure_stream(name: str, make, repeats: int, folder: Path) -> list[dict]:
    """Export seconds, one token's step and one token's ``update`` for one series (module docstring)."""
    import torch

    import tsrsa

    P = PATCH_LEN
    df = frame(8, HISTORY + P * (repeats + 2))
    model = make().fit(df.groupby("unique_id").head(HISTORY))
    start = time.perf_counter()
    path = model.to_onnx(folder / f"{name.replace(' ', '_').replace(',', '')}.onnx")
    export_s = time.perf_counter() - start
    served = tsrsa.load_onnx(path, threads=1)
    rows = [{"model": name, "call": "export", "engine": "torch.onnx", "median_ms": round(1000 * export_s, 1),
             "repeats": 1}]

    def row(call: str, engine: str, ms: float) -> None:
        rows.append({"model": name, "call": call, "engine": engine, "median_ms": round(ms, 3), "repeats": repeats})

    network = model.network_.eval()
    state = model.memory_.groups[0].state.select([0])  # series s0 after its 400 steps
    patch = torch.randn(1, P)

    def torch_step():
        with torch.no_grad():
            network.stream(patch, state)

    feeds = {"patch": patch.numpy()}
    held = served.state.states  # name -> (S, ...), or a growing cache's list of (1, ...) per series
    feeds.update({f"state.{n}": held[n][:1] if isinstance(held[n], np.ndarray) else held[n][0]
                  for n in served.state.names})
    outputs = ["forecast", *[f"next.{n}" for n in served.state.names]]
    row("step", "torch", median_ms(torch_step, repeats))
    row("step", "onnxruntime", median_ms(lambda: served.state.run(feeds, outputs), repeats))
    later = df[df["unique_id"] == "s0"].iloc[HISTORY:]
    chunks = iter([later.iloc[i * P:(i + 1) * P] for i in range(repeats + 1)])
    row("update", "torch", median_ms(lambda: model.update(next(chunks)), repeats))
    chunks = iter([later.iloc[i * P:(i + 1) * P] for i in range(repeats + 1)])
    row("update", "onnxruntime", median_ms(lambda: served.update(next(chunks)), repeats))
    size = sum(os.path.getsize(p) for p in folder.glob(f"{path.name}*"))
    for r in rows:
        r["onnx_bytes"] = size
    return rows


def stream_table(results: pd.DataFrame) -> str:
    """The markdown table of ``--streams``: export seconds, then step and update, torch against onnxruntime."""
    lines = ["| model | export (s) | step, torch (ms) | step, onnxruntime (ms) | update, torch (ms) | "
             "update, onnxruntime (ms) |", "|---|---:|---:|---:|---:|---:|"]
    for model, rows in results.groupby("model", sort=False):
        ms = {(r["call"], r["engine"]): r["median_ms"] for _, r in rows.iterrows()}
        lines.append(f"| {model} | {ms[('export', 'torch.onnx')] / 1000:.1f} | {ms[('step', 'torch')]:.2f} | "
                     f"{ms[('step', 'onnxruntime')]:.2f} | {ms[('update', 'torch')]:.2f} | "
                     f"{ms[('update', 'onnxruntime')]:.2f} |")
    first = results[results["call"] != "export"].iloc[0]  # a timed call's row: its repeats
    runs = results.groupby(["date", "load_average"], sort=False)["model"].unique()  # one run, or kinds measured apart
    load = f"load average {first['load_average']} at the start, {first['date']}"
    if len(runs) > 1:
        apart = "; ".join(f"{' and '.join(models)}: {average}, {date}"
                          for (date, average), models in runs.iloc[1:].items())
        load += f" (measured apart with --kinds: {apart})"
    lines.append("")
    lines.append(f"One series, one token (patch_len {PATCH_LEN}) per call after {HISTORY} steps; median of "
                 f"{first['repeats']} calls, one thread each side; d_model 64, 2 layers, h {H}, input_size "
                 f"{INPUT_SIZE}, bounded caches of {INPUT_SIZE // PATCH_LEN} tokens, unbounded ones of "
                 f"{HISTORY // PATCH_LEN} at the first step; {first['machine']}, {load}; torch {first['torch']}, "
                 f"onnxruntime {first['onnxruntime']}. `{STREAM_COMMAND}`")
    return "\n".join(lines)


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
    parser.add_argument("--streams", action="store_true", help="the streaming kinds' exported step instead")
    parser.add_argument("--kinds", nargs="+", help="with --streams: only these kinds (the CSV keeps the others)")
    args = parser.parse_args(argv)
    kinds = stream_kinds()
    unknown = sorted(set(args.kinds or []) - set(kinds))
    if unknown:
        parser.error(f"unknown --kinds {unknown}; choose from {list(kinds)}")
    if args.from_csv:
        if args.streams:
            return report(pd.read_csv(STREAM_RESULTS), args.docs, streams=True)
        return report(pd.read_csv(RESULTS), args.docs)
    import onnxruntime
    import torch

    load = os.getloadavg()[0]

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        if args.streams:
            for name, make in kinds.items():
                if args.kinds is None or name in args.kinds:
                    rows += measure_stream(name, make, args.repeats, Path(folder))
        else:
            for name, make in models().items():
                if name in args.models:
                    rows += measure(name, make, args.series, args.repeats, Path(folder))
    results = pd.DataFrame(rows)
    results["h"], results["input_size"], results["threads"] = H, INPUT_SIZE, 1
    results["date"] = datetime.date.today().isoformat()
    results["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    results["load_average"] = round(load, 1)
    results["torch"], results["onnxruntime"] = torch.__version__, onnxruntime.__version__
    target = STREAM_RESULTS if args.streams else RESULTS
    if args.streams and args.kinds and target.exists():  # the kinds not measured keep their rows, in kind order
        kept = pd.read_csv(target)
        results = pd.concat([kept[~kept["model"].isin(args.kinds)], results], ignore_index=True)
        order = {name: i for i, name in enumerate(kinds)}
        results = results.sort_values("model", key=lambda m: m.map(order), kind="stable").reset_index(drop=True)
    target.parent.mkdir(exist_ok=True)
    results.to_csv(target, index=False)
    report(results, args.docs, streams=args.streams)


def report(results: pd.DataFrame, docs: bool, *, streams: bool = False) -> None:
    """Print the table; with ``docs``, write it into docs/serving.md."""
    text = stream_table(results) if streams else table(results)
    print(text)
    if docs:
        from tsrsa.benchmarking.results import replace_section

        replace_section(DOCS, "onnx-stream-latency" if streams else "onnx-latency", text)


if __name__ == "__main__":
    main()
