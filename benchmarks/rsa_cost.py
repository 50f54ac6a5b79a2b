"""RSA's fit against its twin's: wall time at the defaults, on a short series and a long one.

    python benchmarks/rsa_cost.py                 # every series, 3 paired repeats, ~8 minutes
    python benchmarks/rsa_cost.py --repeats 5 --no-write

The twin is ``TransformerForecaster`` with the same settings (softmax attention instead of RSA's).
Both fit at the library's defaults (``val_size=h``, one thread) in one process, alternating RSA and
the twin within each repeat after an untimed warm-up fit of each (imports and first-call set-up are
paid once per process, not per fit). Per fit: the wall time of ``fit`` and of ``predict``; the
ratio is RSA's median over the twin's. On the series named by ``--profile``, a profiled fit of each
splits ``fit`` into the data start (RSA's AR and season estimates and head assignment), the
statistical start, training, and the rest; and one attention layer of each alone, forward and
backward at the fit's token count (``layer_step``), shows RSA's extra work per layer without the rest
of the step, and how many operator calls it takes (``operator_calls``).

Series: the short series of the classic set (``AirPassengers``, 144 steps, and ``monthly_milk``, 168,
whole; ``ausbeer``, ``co2``, ``sunspots``, ``us_gasoline`` and ``daily_min_temperatures`` at their latest
200 steps, as the short-series benchmark's shortest length), each at its horizon there, and ETTh1's
``OT`` (hourly, its 12 months of training and 4 of validation, h 96): the short series' geometric mean
ratio closes the first table.
Writes ``benchmarks/results/rsa_cost.csv`` and the "RSA's cost against its twin" section of RESULTS.md.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.classic import CLASSIC, read_classic  # noqa: E402
from tsrsa.benchmarking.results import machine_description, replace_section  # noqa: E402
from tsrsa.start.fit import forget_kept_fits  # noqa: E402

RESULTS = HERE / "results"
PHASES = {"statistical start": ("fit",), "data start": ("_prepare_fit", "_initialise_network"),
          "training": ("train_network",)}


def data_folder() -> Path:
    return Path(os.environ.get("TSRSA_DATA_DIR", HERE.parents[1] / "shared" / "datasets"))


def series(name: str) -> tuple[pd.DataFrame, int]:
    """(long frame, h) of one benchmark series: ``ETTh1_OT``, a classic series by name (its whole length) or
    ``name:n`` (its latest n steps), at its short-series horizon."""
    if name != "ETTh1_OT":
        key, _, steps = name.partition(":")
        y, h = read_classic(key, data_folder() / "classic"), CLASSIC[key].h
        y = y.iloc[-int(steps):] if steps else y
    else:
        raw = pd.read_csv(data_folder() / "ETTh1.csv", parse_dates=["date"]).iloc[:12 * 30 * 24 + 4 * 30 * 24]
        y, h = pd.Series(raw["OT"].to_numpy(), index=raw["date"]), 96
    return pd.DataFrame({"unique_id": name, "ds": y.index, "y": y.to_numpy()}), h


def model(kind: str, h: int, seed: int):
    cls = tsrsa.RSAForecaster if kind == "RSA" else tsrsa.TransformerForecaster
    return cls(h=h, val_size=h, random_state=seed, trainer={"num_threads": 1})


def timed_fit(kind: str, df: pd.DataFrame, h: int, seed: int) -> dict:
    """One fit and prediction, timed; the statistical start fitted afresh (as on data seen first)."""
    m = model(kind, h, seed)
    forget_kept_fits()
    start = time.perf_counter()
    m.fit(df)
    fitted = time.perf_counter()
    m.predict()
    done = time.perf_counter()
    return {"fit_seconds": fitted - start, "predict_seconds": done - fitted, "epochs": len(m.fit_history_),
            "max_epochs": m.max_epochs_, "windows": m.n_train_windows_, "input_size": m.resolved_input_size,
            "patch_len": m.patch_len}


def phases(kind: str, df: pd.DataFrame, h: int) -> dict:
    """Seconds of each phase of one profiled fit (the profiler's own overhead included)."""
    profile = cProfile.Profile()
    m = model(kind, h, 0)
    forget_kept_fits()
    start = time.perf_counter()
    profile.runcall(m.fit, df)
    total = time.perf_counter() - start
    stats = pstats.Stats(profile).stats  # {(file, line, function): (cc, nc, tt, ct, callers)}
    out = {}
    for phase, functions in PHASES.items():
        out[phase] = sum(ct for (_, _, fn), (_, _, _, ct, _) in stats.items() if fn in functions)
    out["other"] = total - sum(out.values())
    return out


def layer_step(tokens: int, rounds: int = 7, steps: int = 300) -> dict:
    """Microseconds of one training forward and backward of one attention layer at the defaults' shape
    (batch 32, d_model 64, 4 heads, dropout 0.1): RSA's (its default heads) and the twin's softmax layer,
    alternating rounds of ``steps``, the fastest round of each (the least disturbed by other work)."""
    import torch

    from tsrsa.nn.rsa import RSAAttention
    from tsrsa.nn.softmax import SoftmaxAttention

    torch.manual_seed(0)
    layers = {"RSA": RSAAttention(64, 4, dropout=0.1).train(),
              "Transformer": SoftmaxAttention(64, 4, dropout=0.1).train()}
    x = torch.randn(32, tokens, 64, requires_grad=True)
    best = dict.fromkeys(layers, float("inf"))
    for round_ in range(rounds + 1):  # the first round warms up
        for kind, layer in layers.items():
            start = time.perf_counter()
            for _ in range(steps):
                layer(x).sum().backward()
            if round_:
                best[kind] = min(best[kind], (time.perf_counter() - start) / steps * 1e6)
    return {kind: (best[kind], operator_calls(layer, x)) for kind, layer in layers.items()}


def operator_calls(layer, x) -> int:
    """Operator calls (ATen ops reaching the dispatcher, forward and backward) of one training step of
    ``layer`` on ``x``: on the CPU each costs a few microseconds whatever the size of its tensors."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        layer(x).sum().backward()
    return Count.calls


def run(names, repeats: int, profiled=("AirPassengers", "ETTh1_OT")) -> pd.DataFrame:
    rows = []
    warm, h_warm = series("AirPassengers")
    for kind in ("RSA", "Transformer"):  # warm-up: imports and first-call set-up, paid once per process
        timed_fit(kind, warm, h_warm, 99)
    for name in names:
        df, h = series(name)
        for repeat in range(repeats):
            for kind in ("RSA", "Transformer"):
                row = timed_fit(kind, df, h, repeat)
                rows.append({"series": name, "model": kind, "repeat": repeat, "h": h, **row})
                print(f"{name} {kind} repeat {repeat}: fit {row['fit_seconds']:.2f} s ({row['epochs']} epochs)",
                      flush=True)
        if name not in profiled:  # the phases and the layer step of the series named in ``profiled`` only
            continue
        for kind in ("RSA", "Transformer"):
            for phase, seconds in phases(kind, df, h).items():
                rows.append({"series": name, "model": kind, "repeat": -1, "h": h, "phase": phase,
                             "fit_seconds": seconds})
        fitted = next(row for row in rows if row["series"] == name and "input_size" in row)
        tokens = fitted["input_size"] // fitted["patch_len"]
        for kind, (microseconds, calls) in layer_step(tokens).items():
            rows.append({"series": name, "model": kind, "h": h, "phase": "layer step", "tokens": tokens,
                         "microseconds": microseconds, "operator_calls": calls})
    out = pd.DataFrame(rows)
    out.insert(0, "date", dt.date.today().isoformat())
    out["machine"] = machine_description() + ", 1 thread"
    return out


def per_epoch(rows: pd.DataFrame, kind: str) -> float:
    """Median seconds per epoch of one model's timed fits."""
    mine = rows[rows["model"] == kind]
    return float((mine["fit_seconds"] / mine["epochs"]).median())


def section(table: pd.DataFrame, command: str) -> str:
    timed = table[table["repeat"] >= 0]
    lines = [f"What: the wall time of a fit at the defaults, RSA against its twin (`TransformerForecaster` with the "
             f"same settings), paired in one process on one thread, median of {timed['repeat'].nunique()} "
             f"repeats; a profiled fit of each splits it into phases.\n",
             "| series | h | input / patch | windows | RSA fit (s) | twin fit (s) | ratio | RSA epochs | twin epochs "
             "| ratio per epoch | RSA predict (s) | twin predict (s) |", "|" + "---|" * 12]
    short = []  # (fit ratio, per-epoch ratio) of each series but ETTh1's
    for name, rows in timed.groupby("series", sort=False):
        med = rows.groupby("model").median(numeric_only=True)
        r, t = med.loc["RSA"], med.loc["Transformer"]
        if name != "ETTh1_OT":
            short.append((r.fit_seconds / t.fit_seconds, per_epoch(rows, "RSA") / per_epoch(rows, "Transformer")))
        lines.append(f"| {name} | {int(r.h)} | {int(r.input_size)} / {int(r.patch_len)} | {int(r.windows):,} | "
                     f"{r.fit_seconds:.2f} | {t.fit_seconds:.2f} | {r.fit_seconds / t.fit_seconds:.2f} | "
                     f"{r.epochs:.0f} | {t.epochs:.0f} | "
                     f"{per_epoch(rows, 'RSA') / per_epoch(rows, 'Transformer'):.2f} | "
                     f"{r.predict_seconds:.3f} | {t.predict_seconds:.3f} |")
    if len(short) > 1:
        fit, epoch = np.exp(np.log(np.array(short)).mean(axis=0))
        lines.append(f"| short series, geometric mean ({len(short)}) |  |  |  |  |  | {fit:.2f} |  |  | "
                     f"{epoch:.2f} |  |  |")
    phase = table["phase"] if "phase" in table else pd.Series(None, index=table.index, dtype=object)
    profiled = table[(table["repeat"] < 0) & phase.notna() & (phase != "layer step")]
    if len(profiled):
        split = profiled.pivot_table(index=["series", "model"], columns="phase", values="fit_seconds")
        lines += ["", "Profiled fit, seconds by phase (the profiler slows every phase; read the shares):", "",
                  "| series | model | " + " | ".join(split.columns) + " |", "|---|---|" + "---|" * len(split.columns)]
        for (name, kind), row in split.iterrows():
            lines.append(f"| {name} | {kind} | " + " | ".join(f"{row[c]:.2f}" for c in split.columns) + " |")
    steps = table[phase == "layer step"]
    if len(steps):
        lines += ["", "One attention layer's training forward and backward at the fit's token count (batch 32, "
                  "d_model 64, 4 heads, dropout 0.1; the fastest of 7 rounds of 300; `layer_step`):", "",
                  "| series | tokens | RSA (µs) | twin (µs) | RSA's extra (µs) | ratio | RSA operator calls "
                  "| twin operator calls |", "|" + "---|" * 8]
        for name, rows in steps.groupby("series", sort=False):
            us = rows.set_index("model")["microseconds"]
            calls = rows.set_index("model")["operator_calls"] if "operator_calls" in rows else {}
            counts = " | ".join(f"{calls[k]:.0f}" if k in calls and calls[k] == calls[k] else ""
                                for k in ("RSA", "Transformer"))
            lines.append(f"| {name} | {int(rows['tokens'].iloc[0])} | {us['RSA']:.0f} | {us['Transformer']:.0f} | "
                         f"{us['RSA'] - us['Transformer']:.0f} | {us['RSA'] / us['Transformer']:.2f} | {counts} |")
    lines += ["", f"Command: `{command}`. Date: {table['date'].iloc[0]}. Machine: {table['machine'].iloc[0]}. "
              f"Rows: [`benchmarks/results/rsa_cost.csv`](results/rsa_cost.csv)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", default="AirPassengers,monthly_milk,ausbeer:200,co2:200,sunspots:200,"
                                            "us_gasoline:200,daily_min_temperatures:200,ETTh1_OT")
    parser.add_argument("--profile", default="AirPassengers,ETTh1_OT", help="series whose fit is profiled")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    table = run(args.series.split(","), args.repeats, args.profile.split(","))
    command = " ".join(["python benchmarks/rsa_cost.py", *(sys.argv[1:] if argv is None else argv)])
    text = section(table, command)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        table.to_csv(RESULTS / "rsa_cost.csv", index=False)
        replace_section(HERE / "RESULTS.md", "rsa-cost", text, title="RSA's cost against its twin")


if __name__ == "__main__":
    main()
