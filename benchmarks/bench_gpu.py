"""Training speed and peak memory on a CUDA device: every sequence-mixing kind and the LSTM against the
number of steps in the window, and ``torch.compile`` against eager execution.

    python benchmarks/bench_gpu.py [--kinds softmax,rsa,...] [--inputs 96,720,2880] [--patches 1,4]
                                   [--compile softmax,rsa] [--compile-inputs 96,720] [--fla linear,fast_weight]
                                   [--fla-inputs 96,720,2880] [--deadline SECONDS] [--out CSV]
    python benchmarks/bench_gpu.py --tables-only

One cell is a network at the library's default width (d_model 64, 4 heads, 2 layers, d_ff 128; the LSTM
64 wide, 2 layers; h 96), every attention kind with ``causal=True`` as in ``bench_kinds.py``, trained
with AdamW on random batches of 32 windows (the long-horizon benchmark's batch) on the GPU. *windows/s*:
training windows per second over the timed steps (3 untimed steps first, then steps until 1 second or
100 steps have passed, at least 3; the device synchronised before each clock reading); *peak MB*: the
rise of ``torch.cuda.max_memory_allocated`` over the steps above what the model and the batch held.
Compile rows run the cell at the ``--compile-inputs`` (patch 4) with the network wrapped in
``torch.compile`` (default mode), each next to an eager row of the same run; *compile s* is the time
of its first step. Fla rows (where flash-linear-attention is installed) time the ``--fla`` kinds at
one-step tokens with ``backend="fla"`` beside ``backend="torch"``, both under bf16 autocast, and record
the relative difference of the two forwards on the same weights. Past ``--deadline`` seconds the cells
left are skipped.

Rows go to ``benchmarks/results/gpu_speed.csv`` (or ``--out``), numbered by run within a date.
``--tables-only`` rewrites the RESULTS.md sections "gpu-speed" (from those rows) and "gpu-ltsf" (the
long-horizon suite run on a GPU: ``benchmarks/results/ltsf_gpu.csv``, its run log
``ltsf_gpu_runs.jsonl``, beside the CPU rows of ``ltsf.csv``).
"""
from __future__ import annotations

import argparse
import datetime
import functools
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "gpu_speed.csv"
COLUMNS = ("date", "run", "model", "mode", "input_size", "patch_len", "tokens", "batch_size", "windows_per_s",
           "peak_mb", "compile_s", "params", "device", "rel_diff")
KINDS = ("softmax", "rsa", "linear", "fast_weight", "block_recurrent", "t2r")
INPUTS = (96, 720, 2880)
PATCHES = (1, 4)
BATCH, HORIZON = 32, 96


FLA_KINDS = ("linear", "fast_weight")  # the kinds with a flash-linear-attention backend


def build(model: str, input_size: int, patch_len: int, backend: str | None = None):
    """The network of one cell: an attention kind in the backbone (with ``backend`` if given), or the LSTM."""
    from tsrsa.nn.backbone import BackboneConfig, build_transformer
    from tsrsa.nn.lstm import LSTMConfig, LSTMNetwork

    if model == "LSTM":
        return LSTMNetwork(LSTMConfig(input_size=input_size, h=HORIZON, patch_len=patch_len))
    options = {"rem_mask": "causal"} if model == "rsa" else {}
    if backend is not None:
        options["backend"] = backend
    return build_transformer(BackboneConfig(input_size=input_size, h=HORIZON, patch_len=patch_len, attention=model,
                                            causal=True, attention_options=options))


def relative_difference(network, reference, x) -> float:
    """‖network(x) − reference(x)‖ / ‖reference(x)‖ under bf16 autocast, in eval mode, ``reference``
    holding ``network``'s weights."""
    import torch

    reference.load_state_dict(network.state_dict())
    network.eval()
    reference.eval()
    with torch.no_grad(), torch.autocast(x.device.type, dtype=torch.bfloat16):
        got, want = network(x).float(), reference(x).float()
    network.train()
    return float((got - want).norm() / want.norm())


def cell(model: str, input_size: int, patch_len: int, compiled: bool = False, device: str = "cuda",
         backend: str | None = None) -> dict:
    """Measure one cell on ``device`` (peak memory only on a CUDA device). With ``backend`` ("torch" or
    "fla") the steps run under bf16 autocast with that backend of the kind, and an "fla" cell records
    its forward's relative difference from the torch backend's on the same weights and batch."""
    import contextlib

    import torch

    torch.manual_seed(0)
    device = torch.device(device)
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    network = build(model, input_size, patch_len, backend).to(device)
    params = sum(p.numel() for p in network.parameters())
    run = torch.compile(network) if compiled else network
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-4)
    x = torch.randn(BATCH, input_size, device=device)
    y = torch.randn(BATCH, HORIZON, 1, device=device)
    rel_diff = None
    if backend == "fla":
        rel_diff = relative_difference(network, build(model, input_size, patch_len, "torch").to(device), x)
    autocast = (functools.partial(torch.autocast, device.type, dtype=torch.bfloat16) if backend is not None
                else contextlib.nullcontext)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = torch.nn.functional.mse_loss(run(x).float(), y)
        loss.backward()
        optimizer.step()

    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated() if cuda else 0
    began = time.perf_counter()
    step()
    sync()
    first = time.perf_counter() - began
    for _ in range(2):
        step()
    sync()
    steps, began = 0, time.perf_counter()
    while steps < 3 or (steps < 100 and time.perf_counter() - began < 1.0):
        step()
        steps += 1
        if steps % 10 == 0:
            sync()
    sync()
    seconds = time.perf_counter() - began
    peak = (torch.cuda.max_memory_allocated() - held) / 2**20 if cuda else float("nan")
    tokens = input_size // patch_len
    mode = "compile" if compiled else "eager" if backend is None else f"bf16 {backend}"
    return {"model": model, "mode": mode, "input_size": input_size,
            "patch_len": patch_len, "tokens": tokens, "batch_size": BATCH,
            "windows_per_s": round(steps * BATCH / seconds, 1),
            "peak_mb": round(peak, 1),
            "compile_s": round(first, 1) if compiled else None, "params": params, "rel_diff": rel_diff}


def _speed(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def _paired(df: pd.DataFrame, rows: pd.DataFrame, mode: str):
    """Each of ``rows`` (sorted) with the last row of ``mode`` of the same cell in the same run, where
    there is one."""
    cell = ["date", "run", "model", "input_size", "patch_len"]
    for _, row in rows.sort_values(["model", "input_size", "date", "run"]).iterrows():
        base = df[(df["mode"] == mode) & (df[cell] == row[cell]).all(axis=1)]
        if not base.empty:
            yield row, base.iloc[-1]


def speed_section(df: pd.DataFrame) -> str:
    """The scaling tables from the run with the most eager cells; each compile row against the eager row
    of its own run."""
    eager_counts = df[df["mode"] == "eager"].groupby(["date", "run"]).size()
    date, run = eager_counts.idxmax()
    grid = df[(df["date"] == date) & (df["run"] == run) & (df["mode"] == "eager")]
    lines = []
    for patch_len, part in grid.groupby("patch_len", sort=True):
        inputs = sorted(part["input_size"].unique())
        lines += [f"**patch_len {patch_len}**; cells: windows/s, peak MB", "",
                  "| model | " + " | ".join(f"input {i} ({i // patch_len} tokens)" for i in inputs)
                  + " | time per token, last ÷ first |", "|---|" + "---|" * (len(inputs) + 1)]
        for model in [m for m in (*KINDS, "LSTM") if m in set(part["model"])]:
            got = part[part["model"] == model].set_index("input_size").sort_index()
            cells = [f"{_speed(got.at[i, 'windows_per_s'])}, {got.at[i, 'peak_mb']:,.0f}" if i in got.index else ""
                     for i in inputs]
            first, last = got.iloc[0], got.iloc[-1]
            ratio = (first["windows_per_s"] * first["tokens"]) / (last["windows_per_s"] * last["tokens"])
            lines.append(f"| {model} | " + " | ".join(cells)
                         + f" | {ratio:.2f} ({first['tokens']} → {last['tokens']} tokens) |")
        lines.append("")
    compiled = df[df["mode"] == "compile"]
    if not compiled.empty:
        lines += ["**torch.compile** (default mode) against eager, the same cell in the same run", "",
                  "| model | input (patch 4) | run | eager windows/s | compiled windows/s | compiled ÷ eager | "
                  "first step, s |", "|---|---|---|---|---|---|---|"]
        for row, base in _paired(df, compiled, "eager"):
            lines.append(f"| {row['model']} | {row['input_size']} | {row['date']} #{row['run']} | "
                         f"{_speed(base['windows_per_s'])} | {_speed(row['windows_per_s'])} | "
                         f"{row['windows_per_s'] / base['windows_per_s']:.2f} | {row['compile_s']:.0f} |")
        lines.append("")
    fla = df[df["mode"] == "bf16 fla"] if "rel_diff" in df else df.iloc[:0]
    if not fla.empty:
        lines += ["**flash-linear-attention kernels** (`backend=\"fla\"`) against the torch form, both under bf16 "
                  "autocast, the same cell in the same run (patch 1; *rel. diff*: ‖fla − torch‖ / ‖torch‖ of the "
                  "forward on the same weights and batch)", "",
                  "| model | input (tokens) | device | torch windows/s, peak MB | fla windows/s, peak MB | fla ÷ torch "
                  "| rel. diff |", "|---|---|---|---|---|---|---|"]
        for row, base in _paired(df, fla, "bf16 torch"):
            lines.append(f"| {row['model']} | {row['input_size']} ({row['tokens']}) | "
                         f"{row['device'].split(',')[0]} | {_speed(base['windows_per_s'])}, {base['peak_mb']:,.0f} | "
                         f"{_speed(row['windows_per_s'])}, {row['peak_mb']:,.0f} | "
                         f"{row['windows_per_s'] / base['windows_per_s']:.2f} | {row['rel_diff']:.1e} |")
        lines.append("")
    return (
        "Training windows per second (batch 32, forward, backward and an AdamW step) and the rise of peak GPU memory "
        "over those steps, for each kind in the fixed-window backbone at the default width (d_model 64, 4 heads, "
        "2 layers, h 96, `causal=True`) and the default LSTM, against the input length. *Time per token, last ÷ "
        "first*: the training time per window and token at the longest input over that at the shortest (about 1 or "
        "less for a kind linear in the tokens; the kind's cost per step is then flat or still below the GPU's "
        "launch-bound floor).\n\n" + "\n".join(lines)
        + f"\nMade by `python benchmarks/bench_gpu.py` (scaling: {date}, run {run}, {grid['device'].iloc[0]}); "
        "rows in `benchmarks/results/gpu_speed.csv`."
    )


#: the configuration the GPU suite ran, per model: the earlier tables' (learning rate 1e-4, MSE, constant rate)
SUITE = {"RSAForecaster": "gate_init=-2,learning_rate=1e-4,loss=mse,lr_schedule=null,start=null",
         "TransformerForecaster": "learning_rate=1e-4,loss=mse,lr_schedule=null,start=null"}


def suite_section(gpu: pd.DataFrame, cpu: pd.DataFrame, runs: list[dict]) -> str:
    """The long-horizon suite run on the GPU: test MSE per seed for RSA and its twin, the paired
    difference, and the CPU table's default rows of the same cells beside them."""
    names = {"RSAForecaster": "RSA", "TransformerForecaster": "Transformer"}
    from tsrsa.benchmarking.results import KEY

    gpu, cpu = (df.drop_duplicates(list(KEY), keep="last") for df in (gpu, cpu))  # a re-run replaces its row
    gpu, cpu = (df[(df["variant"] == df["model"].map(SUITE)) & (df["input_size"] == 96)
                   & (df["train_fraction"] == 1.0)] for df in (gpu, cpu))
    seeds = sorted(gpu["seed"].unique())
    head = ["data", "H", *[f"{names[m]} s{s}" for m in names for s in seeds], "RSA − twin (paired seeds)",
            "CPU RSA / twin (seeds)", "fit s (side by side)"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for (dataset, h), cell in gpu.groupby(["dataset", "horizon"], sort=True):
        mse = cell.set_index(["model", "seed"])["mse"]
        values = [f"{mse[(m, s)]:.3f}" if (m, s) in mse.index else "—" for m in names for s in seeds]
        paired = [mse[("RSAForecaster", s)] - mse[("TransformerForecaster", s)] for s in seeds
                  if ("RSAForecaster", s) in mse.index and ("TransformerForecaster", s) in mse.index]
        diff = f"{sum(paired) / len(paired):+.4f} ({len(paired)})" if paired else "—"
        here = cpu[(cpu["dataset"] == dataset) & (cpu["horizon"] == h)].groupby("model")["mse"].agg(["mean", "size"])
        on_cpu = " / ".join(f"{here.at[m, 'mean']:.3f} ({here.at[m, 'size']})" if m in here.index else "—"
                            for m in names)
        seconds = f"{cell['train_seconds'].min():.0f}–{cell['train_seconds'].max():.0f}"
        lines.append(f"| {dataset} | {h} | " + " | ".join(values) + f" | {diff} | {on_cpu} | {seconds} |")
    means = []
    for dataset, part in gpu.groupby("dataset", sort=True):
        for model, name in names.items():
            for seed in seeds:
                got = part[(part["model"] == model) & (part["seed"] == seed)]
                if len(got) == 4:
                    means.append(f"{dataset} {name} seed {seed} {got['mse'].mean():.3f}")
    log = "; ".join(f"`{r['command']}` ({r['date'][:10]}, {r['rows']} rows in {r['wall_seconds']:.0f} s"
                    + (", stopped before its other cells finished" if r.get("interrupted") else "") + ")" for r in runs)
    return (
        f"Test MSE on the GPU ({gpu['device'].iloc[0].removeprefix('cuda (').rstrip(')')}), input 96, the "
        "earlier tables' configuration (`SUITE`: learning rate 1e-4, MSE at a constant rate, RSA's gate at "
        "−2), next to the CPU table's mean over its seeds for the same cells. *fit s*: the "
        "range of the cells' training seconds, each fit in its own process beside the others on the one GPU. "
        "Four-horizon averages where a seed has all four: " + "; ".join(means) + ".\n\n" + "\n".join(lines)
        + f"\n\nRuns: {log}. Rows in `benchmarks/results/ltsf_gpu.csv`, run log "
        "`benchmarks/results/ltsf_gpu_runs.jsonl`; `benchmarks/run_gpu_checks.sh` is the one command that ran "
        "them beside the GPU tests."
    )


def write_results(results_md: Path = HERE / "RESULTS.md") -> None:
    """Rewrite the two GPU sections of RESULTS.md from the CSVs in ``benchmarks/results``."""
    import json

    from tsrsa.benchmarking.results import replace_section

    replace_section(results_md, "gpu-speed", speed_section(pd.read_csv(CSV)))
    runs = [json.loads(line) for line in (HERE / "results" / "ltsf_gpu_runs.jsonl").read_text().splitlines() if line]
    replace_section(results_md, "gpu-ltsf", suite_section(pd.read_csv(HERE / "results" / "ltsf_gpu.csv"),
                                                          pd.read_csv(HERE / "results" / "ltsf.csv"), runs))


def _names(text: str) -> list[str]:
    return [v for v in text.split(",") if v]


def _ints(text: str) -> list[int]:
    return [int(v) for v in _names(text)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--inputs", default=",".join(map(str, INPUTS)))
    parser.add_argument("--patches", default=",".join(map(str, PATCHES)))
    parser.add_argument("--compile", default="softmax,rsa",
                        help="models (kinds or LSTM) also timed under torch.compile; '' for none")
    parser.add_argument("--compile-inputs", default="96", help="input lengths of the compile rows (patch 4)")
    parser.add_argument("--fla", default=",".join(FLA_KINDS),
                        help="kinds also timed with the flash-linear-attention backend against the torch one, both "
                             "under bf16 autocast (when the fla package imports); '' for none")
    parser.add_argument("--fla-inputs", default="96,720,2880", help="input lengths of the fla rows (patch 1)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds after which the cells left are skipped")
    parser.add_argument("--out", type=Path, default=CSV)
    parser.add_argument("--tables-only", action="store_true",
                        help="measure nothing: rewrite the GPU sections of RESULTS.md from benchmarks/results")
    args = parser.parse_args(argv)
    if args.tables_only:
        write_results()
        return 0
    import torch

    if not torch.cuda.is_available():
        print("bench_gpu: no CUDA device; nothing measured", file=sys.stderr)
        return 1
    started, device = time.perf_counter(), f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    date = datetime.date.today().isoformat()
    earlier = pd.read_csv(args.out) if args.out.exists() else pd.DataFrame(columns=COLUMNS)
    run = int(earlier.loc[earlier["date"] == date, "run"].max()) + 1 if (earlier["date"] == date).any() else 1
    models = _names(args.kinds) + ["LSTM"]
    patches = sorted(_ints(args.patches), reverse=True)  # the cheap cells (fewer tokens) first
    grid = {p: [(m, i, p, False, None) for m in models for i in _ints(args.inputs)] for p in patches}
    compiled = [(m, i, 4, flag, None) for m in _names(args.compile) for i in _ints(args.compile_inputs)
                for flag in (False, True)]
    first = grid[patches[0]] if patches else []
    cells = first + [c for c in compiled if c not in first] + [c for p in patches[1:] for c in grid[p]]
    fla_cells = [(m, i, 1, False, b) for m in _names(args.fla) for i in _ints(args.fla_inputs) for b in ("torch", "fla")]
    if fla_cells:
        try:
            import fla.ops  # noqa: F401
            cells += fla_cells
        except ImportError:
            print("bench_gpu: flash-linear-attention is not installed; its rows are skipped", flush=True)
    skipped = []
    for model, input_size, patch_len, compiled, backend in cells:
        if time.perf_counter() - started > args.deadline:
            skipped.append(f"{model}/{input_size}/{patch_len}{'/compile' if compiled else ''}{'/' + backend if backend else ''}")
            continue
        try:
            row = cell(model, input_size, patch_len, compiled, backend=backend)
        except torch.cuda.OutOfMemoryError:
            print(f"{model} input {input_size} patch {patch_len}: out of GPU memory", flush=True)
            torch.cuda.empty_cache()
            continue
        except Exception as error:  # an optional kernel that fails on this device is reported, not fatal
            if backend != "fla":
                raise
            print(f"{model} input {input_size} fla backend failed: {type(error).__name__}: {error}", flush=True)
            continue
        row = {"date": date, "run": run, **row, "device": device}
        pd.DataFrame([row], columns=COLUMNS).to_csv(args.out, mode="a", header=not args.out.exists(), index=False)
        print(f"{model:16s} {row['mode']:10s} L={input_size:5d} P={patch_len} {row['windows_per_s']:>10,.1f} w/s "
              f"{row['peak_mb']:>9,.1f} MB" + (f" compile {row['compile_s']} s" if compiled else "")
              + (f" rel. diff {row['rel_diff']:.2e}" if row["rel_diff"] is not None else ""), flush=True)
    if skipped:
        print("skipped past the deadline: " + ", ".join(skipped), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
