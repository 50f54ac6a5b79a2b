"""Training throughput, loop overhead, import time and memory, against pytorch-forecasting.

    python benchmarks/bench_training.py                      # everything below, CPU, ~10 minutes
    python benchmarks/bench_training.py --only speed --repeats 3
    python benchmarks/bench_training.py --only patch --patch-lens 1,2,4,8,16,24
    python benchmarks/bench_training.py --only speed --accelerator gpu --dataset ETTm1 --models Transformer,RSA --no-peers

speed    training windows per second of one epoch (ETTh1 OT rows 0-8640, or ETTm1 OT rows 0-34560;
         input 96, horizon 24, batch 64) for tsrsa's forecasters with default settings, the same
         networks in a bare PyTorch loop (the loop's overhead), and pytorch-forecasting's
         RecurrentNetwork (LSTM 2x32) and TemporalFusionTransformer (hidden 32) trained by a
         lightning Trainer on a TimeSeriesDataSet of the same windows; best of --repeats epochs.
imports  seconds to import tsrsa, a forecaster, torch + pandas and pytorch_forecasting in a fresh
         interpreter (best of 5).
memory   peak RSS of fitting (1 epoch, validation on) and predicting 10,000 series x 1,000 steps.
patch    windows per second of the --models per patch_len (ETTh1 OT, batch 64).

Writes CSVs under benchmarks/results/ and its sections of benchmarks/RESULTS.md (only those).
Time it on a quiet machine: other processes on the cores distort every figure. The measurements
are in training_speed.py (speed, patch) and training_footprint.py (imports, memory); the peers'
runners (and the setup both sides share: input, horizon, batch, rows) in training_peers.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

import pandas as pd

from training_footprint import imports, imports_section, memory, memory_probe, memory_section
from training_peers import ROWS, nf_probe
from training_speed import patch_speed, speed, speed_section

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"


# ---------------------------------------------------------------------- writing
def machine() -> str:
    """This machine, as the rows record it."""
    from tsrsa.benchmarking.results import machine_description

    return machine_description()


def append_csv(path: Path, table: pd.DataFrame) -> None:
    """Append ``table``'s rows, dated; a file with other columns is rewritten with the union of both."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = table.assign(date=time.strftime("%Y-%m-%d %H:%M"), machine=machine())
    if path.exists() and list(pd.read_csv(path, nrows=0).columns) != list(table.columns):
        pd.concat([pd.read_csv(path), table], ignore_index=True).to_csv(path, index=False)
    else:
        table.to_csv(path, mode="a", header=not path.exists(), index=False)


def write_patch_speed(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Replace the rows of ``path`` measured now (same model and patch length), keep the others;
    returns the whole file's table."""
    if path.exists():
        old = pd.read_csv(path)
        kept = ~old.set_index(["model", "patch_len"]).index.isin(table.set_index(["model", "patch_len"]).index)
        table = pd.concat([old[kept], table], ignore_index=True)
    table.to_csv(path, index=False)
    return table


def main(argv=None) -> None:
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--nf-probe"]:
        print(json.dumps(nf_probe(argv[1], int(argv[2]), int(argv[3]))))
        return
    if argv[:1] == ["--memory-probe"]:
        print(json.dumps(memory_probe(int(argv[1]), int(argv[2]))))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="speed,imports,memory",
                   help="comma-separated parts: speed, imports, memory, patch (default the first three)")
    p.add_argument("--dataset", default="ETTh1", choices=sorted(ROWS))
    p.add_argument("--models", default="LSTM,Transformer,RSA", help="tsrsa models: LSTM, Transformer, RSA, DLinear")
    p.add_argument("--accelerator", default="cpu")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--import-repeats", type=int, default=5)
    p.add_argument("--no-peers", action="store_true", help="skip pytorch-forecasting")
    p.add_argument("--no-bare", action="store_true", help="skip the bare PyTorch loop")
    p.add_argument("--no-variants", dest="variants", action="store_false",
                   help="skip the per-step forms timed beside the defaults")
    p.add_argument("--neuralforecast-python", default=None,
                   help="python of an environment with neuralforecast 3.x: adds its LSTM to the speed table")
    p.add_argument("--patch-lens", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2, 4, 8, 16, 24])
    p.add_argument("--memory-series", type=int, default=10_000)
    p.add_argument("--memory-length", type=int, default=1_000)
    p.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = p.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    parts = {s.strip() for s in args.only.split(",")}
    shown = list(argv)  # the command as RESULTS.md shows it: no path of this machine's peer environment
    for i, a in enumerate(shown[:-1]):
        if a == "--neuralforecast-python":
            shown[i + 1] = "NF_ENV/bin/python"
    command = "python benchmarks/bench_training.py " + " ".join(shlex.quote(a) for a in shown)
    from tsrsa.benchmarking.results import replace_section

    sections = []
    if "speed" in parts:
        table = speed(args)
        append_csv(RESULTS / "training_speed.csv", table)
        print(table.to_string(index=False))
        name = "training-speed" if args.accelerator == "cpu" else f"training-speed-{args.accelerator}-{args.dataset}"
        title = "Training speed (CPU)" if args.accelerator == "cpu" else f"Training speed ({args.accelerator}, {args.dataset})"
        sections.append((name, speed_section(table, command), title))
    if "imports" in parts:
        table = imports(args)
        append_csv(RESULTS / "import_time.csv", table)
        print(table.to_string(index=False))
        sections.append(("import-time", imports_section(table, command), "Import time"))
    if "memory" in parts:
        table = memory(args)
        append_csv(RESULTS / "memory.csv", table)
        print(table.T.to_string())
        sections.append(("memory", memory_section(table, command), "Memory: many series"))
    if "patch" in parts:
        print(write_patch_speed(patch_speed(args), RESULTS / "patch_len_speed.csv").to_string(index=False))
    if not args.no_write:
        for name, body, title in sections:
            replace_section(RESULTS_MD, name, body, title=title)


if __name__ == "__main__":
    main()
