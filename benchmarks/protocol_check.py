"""The protocol check of BENCHMARKS.md: closed-form channel-independent ridge (penalty 10) on
mean-centred windows, input 96, scored by the harness's own splits, scaling and batched scorer.

    python benchmarks/protocol_check.py            # ETTh1, ETTh2, ETTm1, ETTm2; about a minute

Prints the table and writes it, beside the published one, into benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
DATASETS = ("ETTh1", "ETTh2", "ETTm1", "ETTm2")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=",".join(DATASETS))
    p.add_argument("--data-dir", default=None)
    p.add_argument("--results-md", type=Path, default=HERE / "RESULTS.md")
    p.add_argument("--no-write", action="store_true", help="print only")
    args = p.parse_args(argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)

    from tsrsa.benchmarking.anchors import RIDGE_CHECK
    from tsrsa.benchmarking.protocol import HORIZONS, load_protocol_data
    from tsrsa.benchmarking.results import machine_description, replace_section
    from tsrsa.benchmarking.ridge import ridge_check

    began = time.perf_counter()
    scores = {}
    for name in args.dataset.split(","):
        data = load_protocol_data(name, 96, args.data_dir)
        step = 2 if name.startswith("ETTm") else 1  # as BENCHMARKS.md: every second ETTm window
        scores[name] = {h: ridge_check(data, h, step=step) for h in HORIZONS}

    def cell(mse, mae):
        return f"{mse:.3f}/{mae:.3f}"

    lines = ["| dataset | | H96 | H192 | H336 | H720 | average |", "|---|---|---|---|---|---|---|"]
    for name, by_h in scores.items():
        ours = [cell(by_h[h].mse, by_h[h].mae) for h in HORIZONS]
        avg = cell(sum(by_h[h].mse for h in HORIZONS) / 4, sum(by_h[h].mae for h in HORIZONS) / 4)
        lines.append(f"| {name} | harness | {' | '.join(ours)} | {avg} |")
        ref = RIDGE_CHECK.get(name)
        if ref:
            published = [cell(*ref[h]) for h in HORIZONS]
            lines.append(f"| | BENCHMARKS.md | {' | '.join(published)} | {cell(*ref['avg'])} |")
    table = "\n".join(lines)
    print(table)
    seconds = time.perf_counter() - began
    body = (
        "Closed-form ridge (penalty 10) from the 96 mean-centred inputs to the mean-centred horizon, one map for "
        "all channels, fitted on the training windows (ETTm: every second one), scored on every stride-1 test "
        "window by `tsrsa.benchmarking` (test MSE/MAE on the scaled data), next to the table of BENCHMARKS.md.\n\n"
        f"{table}\n\n"
        f"Made by `python benchmarks/protocol_check.py` on {datetime.date.today().isoformat()}, "
        f"{machine_description()}, in {seconds:.0f} s.\n"
    )
    if not args.no_write:
        replace_section(args.results_md, "ltsf-protocol-check", body, title="Protocol check (closed-form ridge)")
    return scores


if __name__ == "__main__":
    main()
    sys.exit(0)
