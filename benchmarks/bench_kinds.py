"""Training speed and peak memory of each sequence-mixing kind against the number of tokens.

    python benchmarks/bench_kinds.py [--kinds softmax,rsa,linear,fast_weight] [--inputs 96,...,2880]
    python benchmarks/bench_kinds.py --tables-only

One cell is (kind, input length L, patch length P): the fixed-window backbone at the library's
default width (d_model 64, 4 heads, 2 layers, d_ff 128, h 96) with ``causal=True`` for every
kind (the form that streams, so like is compared with like), trained with AdamW on random batches
of 16 windows. *windows/s*: training windows per second over the timed steps (one untimed step
first, then at least 3 steps, and more until 3 seconds or 20 steps have passed); *peak MB*: how far the process's peak
resident memory rose over the training steps (the untimed one included), above what it held with
the model and the batch built (each cell runs in a fresh process, so one cell's peak never hides
another's). One CPU thread.

Rows go to ``benchmarks/results/kinds_scaling.csv``; the RESULTS.md section "kinds-scaling"
gives windows/s and peak MB per kind against the token count L / P.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "kinds_scaling.csv"
COLUMNS = ("date", "kind", "input_size", "patch_len", "tokens", "batch_size", "windows_per_s", "peak_mb",
           "params", "machine")
KINDS = ("softmax", "rsa", "linear", "fast_weight")
INPUTS = (96, 192, 384, 720, 1440, 2880)
PATCHES = (1, 4)
BATCH = 16


def cell(kind: str, input_size: int, patch_len: int) -> dict:
    """Measure one cell in this process (called in a fresh process per cell)."""
    import resource

    import torch

    from tsrsa.nn.backbone import BackboneConfig, build_transformer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = BackboneConfig(input_size=input_size, h=96, patch_len=patch_len, attention=kind, causal=True,
                            attention_options={"rem_mask": "causal"} if kind == "rsa" else {})
    network = build_transformer(config)
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-4)
    x, y = torch.randn(BATCH, input_size), torch.randn(BATCH, 96, 1)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(network(x), y)
        loss.backward()
        optimizer.step()

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    before = peak_mb()
    step()
    steps, began = 0, time.perf_counter()
    while steps < 3 or (steps < 20 and time.perf_counter() - began < 3.0):
        step()
        steps += 1
    seconds = time.perf_counter() - began
    return {"windows_per_s": round(steps * BATCH / seconds, 1), "peak_mb": round(peak_mb() - before, 1),
            "params": sum(p.numel() for p in network.parameters()), "tokens": config.n_tokens}


def _missing(df) -> str:
    """Why a kind stops short of the most tokens: its peak memory's growth at its last two cells, projected."""
    notes = []
    for (kind, patch_len), g in df.groupby(["kind", "patch_len"], sort=True):
        g, most = g.sort_values("tokens"), df[df["patch_len"] == patch_len]["tokens"].max()
        if g["tokens"].iloc[-1] == most or len(g) < 2:
            continue
        (t0, t1), (m0, m1) = g["tokens"].iloc[-2:].astype(int), g["peak_mb"].iloc[-2:]
        projected = m1 * (m1 / m0) ** np.log2(most / t1)
        notes.append(f"{kind} at patch_len {patch_len}: {m0:,.0f} MB at {t0:,} tokens, {m1:,.0f} MB at {t1:,}, "
                     f"about {projected:,.0f} MB projected at {most:,}")
    if not notes:
        return ""
    return (" Empty cells were not run, their peak memory projected too close to the machine's: "
            + "; ".join(notes) + ".")


def _speed(windows_per_s: float) -> str:
    return f"{windows_per_s:.1f}" if windows_per_s < 10 else f"{windows_per_s:,.0f}"


def table(df) -> str:
    df = df.drop_duplicates(["kind", "input_size", "patch_len"], keep="last")
    lines = []
    for patch_len, part in df.groupby("patch_len", sort=True):
        tokens = sorted(part["tokens"].unique())
        lines += [f"**patch_len {patch_len}** (input L = tokens × {patch_len}); cells: windows/s, peak MB", "",
                  "| kind | " + " | ".join(f"{t} tokens" for t in tokens) + " | time per token, last ÷ first |",
                  "|---|" + "---|" * (len(tokens) + 1)]
        for kind in [*KINDS, *sorted(set(part["kind"]) - set(KINDS))]:  # kinds run beyond the default ones too
            got = part[part["kind"] == kind].set_index("tokens")
            if got.empty:
                continue
            cells = [f"{_speed(got.at[t, 'windows_per_s'])}, {got.at[t, 'peak_mb']:,.0f}" if t in got.index else ""
                     for t in tokens]
            first, last = got.sort_index().iloc[0], got.sort_index().iloc[-1]
            ratio = (first["windows_per_s"] * first.name) / (last["windows_per_s"] * last.name)
            lines.append(f"| {kind} | " + " | ".join(cells) + f" | {ratio:.2f} ({first.name} → {last.name} tokens) |")
        lines.append("")
    dates, machine = sorted(df["date"].unique()), df["machine"].iloc[0]
    return (
        "Training windows per second (batch 16, forward, backward and an AdamW step) and the rise of peak resident "
        "memory over those steps, against the number of tokens, for each kind in the fixed-window backbone at the "
        "default width (d_model 64, 4 heads, 2 layers, h 96) with `causal=True` (RSA with its causal REM mask). "
        "*Time per token, last ÷ first*: the training time per window and token at the most tokens run over that at "
        "the fewest; about 1 (or less, as fixed costs spread) for a kind linear in the tokens, about the token "
        "factor for a quadratic one (softmax's score matrix)." + _missing(df) + "\n\n" + "\n".join(lines) +
        f"\nMade by `python benchmarks/bench_kinds.py` on {', '.join(dates)} ({machine}, one thread, "
        "each cell in a fresh process); rows in `benchmarks/results/kinds_scaling.csv`."
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--inputs", default=",".join(map(str, INPUTS)))
    parser.add_argument("--patches", default=",".join(map(str, PATCHES)))
    parser.add_argument("--tables-only", action="store_true")
    parser.add_argument("--cell", nargs=3, metavar=("KIND", "INPUT", "PATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cell:
        print(json.dumps(cell(args.cell[0], int(args.cell[1]), int(args.cell[2]))))
        return 0
    from tsrsa.benchmarking.results import append_rows, machine_description, replace_section

    if not args.tables_only:
        machine = machine_description()
        for patch_len in (int(p) for p in args.patches.split(",")):
            for input_size in (int(x) for x in args.inputs.split(",")):
                for kind in args.kinds.split(","):
                    done = subprocess.run([sys.executable, __file__, "--cell", kind, str(input_size), str(patch_len)],
                                          capture_output=True, text=True)
                    if done.returncode != 0:
                        print(f"{kind} L={input_size} P={patch_len}: failed\n{done.stderr[-2000:]}", flush=True)
                        continue
                    got = json.loads(done.stdout.strip().splitlines()[-1])
                    row = {"date": datetime.date.today().isoformat(), "kind": kind, "input_size": input_size,
                           "patch_len": patch_len, "batch_size": BATCH, "machine": machine, **got}
                    append_rows(CSV, [row], columns=COLUMNS)
                    print(f"{kind} L={input_size} P={patch_len}: {got['windows_per_s']} windows/s, "
                          f"{got['peak_mb']} MB", flush=True)
    if CSV.exists():
        import pandas as pd

        replace_section(HERE / "RESULTS.md", "kinds-scaling", table(pd.read_csv(CSV)),
                        title="Sequence-mixing kinds: training speed and memory against the token count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
