"""Long-horizon benchmark (Time-Series-Library protocol): a thin command line over tsrsa.benchmarking.

    python benchmarks/ltsf.py --dataset ETTh1,ETTh2 --models DLinear --seeds 0,1,2 --num-threads 1

Appends one row per run to benchmarks/results/ltsf.csv and regenerates the tables of
benchmarks/RESULTS.md. `python benchmarks/ltsf.py --help` lists every option.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"  # the shared data folder beside the checkout


def main(argv=None):
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    from tsrsa.benchmarking.cli import main as run

    return run(argv, root=HERE)


if __name__ == "__main__":
    main()
    sys.exit(0)
