"""Peak memory of a data-parallel fit whose ranks read only their share of a Parquet panel.

    python benchmarks/sharded_fit.py --series 100000

A panel of ``--series`` hourly series of ``--steps`` steps (``distributed_predict.series_frame``)
is written to a temporary folder as ``--files`` Parquet files (``tsrsa.data.write_shards``). The
same small model is then fitted three ways, each in fresh processes started as ``torchrun`` starts
them (RANK, WORLD_SIZE, ... on 127.0.0.1; one torch thread each):

- ``one process``: one process reads the whole folder (``pd.read_parquet``) and fits;
- ``2 ranks reading the whole frame``: two ranks each read the whole folder and fit data-parallel (today's
  in-memory path: every rank holds every series);
- ``2 ranks reading their shares``: two ranks each fit from ``ParquetShards``, reading only their share.

Each process reports its peak resident memory (``VmHWM`` of ``/proc/self/status``: the process's
own high-water mark, where ``ru_maxrss`` would carry over the launching process's), the same after
importing tsrsa and torch (the interpreter's share, subtracted for the data's), the series it holds, the best
validation loss of the fit (over all ranks' windows) and the fit's wall time. Each finished run
appends its rows (one per rank) to ``benchmarks/results/sharded_fit.csv`` at once; the section
"sharded-fit" of RESULTS.md is made from that file.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from distributed_predict import series_frame  # noqa: E402
from tsrsa.benchmarking.results import machine_description, replace_section, row_writer  # noqa: E402
from tsrsa.data import write_shards  # noqa: E402

RESULTS = HERE / "results" / "sharded_fit.csv"
COLUMNS = ("date", "machine", "mode", "rank", "world_size", "n_series", "steps", "files", "series_held",
           "peak_mb", "start_mb", "data_mb", "best_val_loss", "fit_seconds", "load_average", "command", "params")
#: the DLinear's parameters as the rows record them: the trainer's options (accelerator, num_threads) by their own
#: names, as before 0.15; each rank passes those in ``trainer`` (``tsrsa.benchmarking.compat.trainer_kwargs``)
PARAMS = dict(h=8, input_size=24, val_size=8, max_epochs=2, batches_per_epoch=200, batch_size=256,
              random_state=0, accelerator="cpu", num_threads=1)
MODES = {"one process": (1, "frame"), "2 ranks reading the whole frame": (2, "frame"),
         "2 ranks reading their shares": (2, "shards")}

RANK = """
import json, sys, time
def peak_mb():  # this process's high-water mark (VmHWM: unlike ru_maxrss, not carried over from the parent)
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
import pandas as pd, torch, tsrsa
from tsrsa.benchmarking.compat import trainer_kwargs  # PARAMS name the trainer's options one by one
from tsrsa.data import ParquetShards
start = peak_mb()
folder, source, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
clock = time.perf_counter()
data = ParquetShards.open(folder) if source == "shards" else pd.read_parquet(folder)
model = tsrsa.DLinearForecaster(**trainer_kwargs(tsrsa.DLinearForecaster, params)).fit(data)
seconds = time.perf_counter() - clock
rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
print(json.dumps({"rank": rank, "series_held": len(model.memory_.ids), "peak_mb": peak_mb(), "start_mb": start,
                  "best_val_loss": float(model.fit_history_["val_loss"].min()), "fit_seconds": seconds}))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_mode(folder: Path, mode: str, timeout: float) -> list[dict]:
    """One fit in ``mode`` (module docstring): each rank's report."""
    world, source = MODES[mode]
    port, procs = str(free_port()), []
    for rank in range(world):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCH_CPP_LOG_LEVEL": "ERROR"}
        if world > 1:
            env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable, "-c", RANK, str(folder), source, json.dumps(PARAMS)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outputs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"{mode}: a rank failed\n{err[-3000:]}")
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def run(n_series: int, steps: int, files: int, modes: list[str], *, timeout: float, command: str) -> None:
    write = row_writer(RESULTS, COLUMNS)
    with tempfile.TemporaryDirectory(prefix="sharded-fit-") as tmp:
        folder = Path(tmp) / "panel"
        write_shards(series_frame(n_series, steps, seed=0), folder, n_files=files)
        for mode in modes:
            for report in run_mode(folder, mode, timeout):
                write({"date": dt.date.today().isoformat(), "machine": machine_description(), "mode": mode,
                       "world_size": MODES[mode][0], "n_series": n_series, "steps": steps, "files": files,
                       "data_mb": round(report["peak_mb"] - report["start_mb"], 1),
                       **{k: round(v, 5) if isinstance(v, float) else v for k, v in report.items()},
                       "load_average": round(os.getloadavg()[0], 2), "command": command,
                       "params": json.dumps(PARAMS, sort_keys=True)})


def section(results: pd.DataFrame) -> str:
    latest = results[results["date"] == results["date"].max()]
    latest = latest.drop_duplicates(["mode", "n_series", "rank"], keep="last")
    lines = ["| series | fit | rank | series held | peak memory (MB) | of which past start-up (MB) | best val loss "
             "| fit time (s) |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for (n, mode), group in latest.groupby(["n_series", "mode"], sort=False):
        for _, row in group.sort_values("rank").iterrows():
            lines.append(f"| {n:,} | {mode} | {row['rank']} | {row['series_held']:,} | {row['peak_mb']:,.0f} | "
                         f"{row['data_mb']:,.0f} | {row['best_val_loss']:.4f} | {row['fit_seconds']:,.1f} |")
    reading = []
    for n, group in latest.groupby("n_series", sort=False):
        share = group[group["mode"] == "2 ranks reading their shares"]
        for mode, what in (("2 ranks reading the whole frame", "a rank holding the whole frame"),
                           ("one process", "one process holding the whole frame")):
            whole = group[group["mode"] == mode]
            if len(whole) and len(share):
                reading.append(
                    f"At {n:,} series a rank reading its share needed "
                    f"{share['data_mb'].max() / whole['data_mb'].max():.2f}× the memory past start-up of {what} "
                    f"({share['data_mb'].max():,.0f} against {whole['data_mb'].max():,.0f} MB), and reached a best "
                    f"validation loss {share['best_val_loss'].min() / whole['best_val_loss'].min():.4f}× its.")
                break
    first = latest.iloc[0]
    return (
        f"A panel of N hourly series of {int(first['steps'])} steps in {int(first['files'])} Parquet files "
        f"(`tsrsa.data.write_shards`), fitted by a small DLinear (`{first['params']}`) in processes started as "
        f"torchrun starts them, one torch thread each: one process reading the folder, two ranks each reading "
        f"the whole folder (every rank holds every series), and two ranks fitting from `ParquetShards`, each "
        f"reading only its share. *Peak memory* is each process's own high-water mark (`VmHWM`); *past start-up* subtracts the "
        f"peak after importing tsrsa and torch. *Best val loss* is over the validation windows of all ranks.\n\n"
        + "\n".join(lines) + "\n\n" + " ".join(reading) + ("\n\n" if reading else "")
        + f"{first['machine']}; measured {first['date']} with "
        + "; ".join(f"`{c}`" for c in dict.fromkeys(latest["command"])) + "."
    )


def write_section() -> None:
    results = pd.read_csv(RESULTS, keep_default_na=False, na_values=[""])
    replace_section(HERE / "RESULTS.md", "sharded-fit", section(results),
                    title="A fit from Parquet shards: memory per rank")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a fit may take")
    parser.add_argument("--tables-only", action="store_true", help="rewrite the RESULTS.md section and stop")
    args = parser.parse_args(argv)
    if not args.tables_only:
        modes = args.modes.split(",")
        unknown = [m for m in modes if m not in MODES]
        if unknown:
            parser.error(f"unknown mode(s) {unknown}; choose from {list(MODES)}")
        run(args.series, args.steps, args.files, modes, timeout=args.timeout,
            command="python benchmarks/sharded_fit.py " + " ".join(
                shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])))
    write_section()


if __name__ == "__main__":
    main()
