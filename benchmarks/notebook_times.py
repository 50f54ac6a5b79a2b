"""Wall time of each notebook as a user runs it (the default ``medium`` budget, no variable set), and its
slowest cells.

    python benchmarks/notebook_times.py                     # all five -> results/notebook_times.csv
    python benchmarks/notebook_times.py 04_tuning.ipynb     # one

Each runs top to bottom in a fresh kernel of this environment (nbclient, as ``jupyter execute`` does),
from the ``notebooks/`` folder, one at a time, with the kernel's own thread default. Rows are appended as
each notebook ends: date, notebook, budget, seconds, the three slowest cells (index: seconds), machine.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDER = HERE.parent / "notebooks"
OUTPUT = HERE / "results" / "notebook_times.csv"
COLUMNS = ["date", "notebook", "budget", "seconds", "slowest_cells", "machine"]


def machine() -> str:
    import torch

    return (f"{platform.processor() or platform.machine()} ({os.cpu_count()} logical cores), "
            f"Python {platform.python_version()}, torch {torch.__version__}")


def cell_seconds(cell) -> float | None:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not start or not end:
        return None
    parse = datetime.datetime.fromisoformat
    return (parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))).total_seconds()


def run(name: str) -> tuple[float, list[tuple[int, float]]]:
    import nbclient
    import nbformat

    nb = nbformat.read(FOLDER / name, as_version=4)
    with tempfile.TemporaryDirectory() as ipython_dir:
        env = {k: v for k, v in os.environ.items() if k != "TSRSA_NOTEBOOK_BUDGET"}
        env["IPYTHONDIR"] = ipython_dir
        client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=True,
                                         resources={"metadata": {"path": str(FOLDER)}})
        previous = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            start = time.perf_counter()
            client.execute()
            seconds = time.perf_counter() - start
        finally:
            os.environ.clear()
            os.environ.update(previous)
    cells = [(i, cell_seconds(c)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    slowest = sorted(((i, s) for i, s in cells if s is not None), key=lambda pair: -pair[1])[:3]
    return seconds, slowest


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks of notebooks/ (default: all)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    names = args.names or sorted(p.name for p in FOLDER.glob("*.ipynb"))
    new = not args.output.exists()
    where = machine()
    with open(args.output, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        for name in names:
            seconds, slowest = run(name)
            cells = "; ".join(f"{i}: {s:.1f}" for i, s in slowest)
            writer.writerow({"date": datetime.date.today().isoformat(), "notebook": name, "budget": "medium",
                             "seconds": round(seconds, 1), "slowest_cells": cells, "machine": where})
            fh.flush()
            print(f"{name}: {seconds:.1f} s (slowest cells {cells})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
