"""Long look-backs: test MSE against the input length, next to the published long-look-back figures.

    python benchmarks/bench_long_input.py --dataset ETTh1,ETTm1 --horizons 96,336 --inputs 96,336,720,1440 \\
        --seeds 0 --num-threads 1
    python benchmarks/bench_long_input.py --tables-only

Each cell is one run of the long-horizon protocol (``benchmarks/ltsf.py``: Time-Series-Library's
splits and training recipe, the files of ``benchmarks/configs/``) at a longer input, for the
block-recurrent model (the Transformer's configuration with ``attention="block_recurrent"``, its
default blocks of 8 tokens and 8 states, fixed gate), the softmax Transformer, RSA and DLinear. Rows
go to ``benchmarks/results/ltsf.csv`` (they carry their input size); the RESULTS.md section
"long-input" gathers them per data set and horizon, with the published figures: PatchTST at input
512 and DLinear at 336 (their papers' tables). Cells are run inputs first, then seeds, so that a
stopped grid has every input of the first seed. Training cost against the input length per kind
is the section "kinds-scaling" (``bench_kinds.py``).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
#: (configuration, variant) -> the name in the table
MODELS = {("Transformer", "attention=block_recurrent"): "Block-recurrent", ("Transformer", "default"): "Transformer",
          ("RSA", "default"): "RSA", ("DLinear", "default"): "DLinear"}
#: published test MSE at H96/192/336/720: PatchTST/64 at input 512 and DLinear at input 336
ANCHORS = {
    "ETTh1": {"PatchTST (input 512)": (0.370, 0.413, 0.422, 0.447), "DLinear (input 336)": (0.375, 0.405, 0.439, 0.472)},
    "ETTm1": {"PatchTST (input 512)": (0.293, 0.333, 0.369, 0.416), "DLinear (input 336)": (0.299, 0.335, 0.369, 0.425)},
}
HORIZONS = (96, 192, 336, 720)


def table(results: Path) -> str:
    import pandas as pd

    from tsrsa.benchmarking.results import read_results

    rows = read_results(results)
    names = {(cls, variant): name for (config, variant), name in MODELS.items()
             for cls in [{"Transformer": "TransformerForecaster", "RSA": "RSAForecaster",
                          "DLinear": "DLinearForecaster"}[config]]}
    rows = rows[[(m, v) in names for m, v in zip(rows["model"], rows["variant"])]]
    rows = rows[rows["dataset"].isin(list(ANCHORS)) & (rows["train_fraction"] == 1.0)]
    long_rows = rows[rows["input_size"] > 96]
    rows = rows[rows.set_index(["dataset", "horizon"]).index.isin(long_rows.set_index(["dataset", "horizon"]).index)]
    if rows.empty:
        return "No run at an input above 96 yet: `python benchmarks/bench_long_input.py`."
    rows = rows.assign(name=[names[(m, v)] for m, v in zip(rows["model"], rows["variant"])])
    inputs = sorted(rows["input_size"].unique())
    out = []
    for (dataset, h), part in rows.groupby(["dataset", "horizon"]):
        lines = [f"**{dataset}, H{h}** (test MSE, mean over the seeds run; seeds in brackets)", "",
                 "| model | " + " | ".join(f"input {i}" for i in inputs) + " |",
                 "|---|" + "---|" * len(inputs)]
        for name in MODELS.values():
            mine = part[part["name"] == name]
            if mine.empty:
                continue
            cells = []
            for i in inputs:
                cell = mine[mine["input_size"] == i]
                cells.append(f"{cell['mse'].mean():.3f} ({len(cell)})" if len(cell) else "")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        for anchor, figures in ANCHORS[dataset].items():
            if h in HORIZONS:
                lines.append(f"| {anchor}, published | {figures[HORIZONS.index(h)]:.3f} |" + " |" * (len(inputs) - 1))
        out.append("\n".join(lines))
    dates = "the runs' dates are in `benchmarks/results/ltsf.csv`"
    return ("Each model's benchmark configuration on the long-horizon protocol at longer inputs (a blank cell was "
            "not run). *Block-recurrent*: the Transformer's configuration with `attention=\"block_recurrent\"` "
            "(blocks of 8 tokens, 8 states, fixed gate).\n\n" + "\n\n".join(out) + "\n\n"
            f"Made by `python benchmarks/bench_long_input.py` ({dates}).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ETTh1,ETTm1")
    parser.add_argument("--horizons", default="96,336")
    parser.add_argument("--inputs", default="96,336,720,1440")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--models", default=",".join(MODELS.values()),
                        help=f"comma-separated: {', '.join(MODELS.values())}")
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--results", type=Path, default=HERE / "results" / "ltsf.csv")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    from tsrsa.benchmarking.cli import main as ltsf
    from tsrsa.benchmarking.results import replace_section

    chosen = [m for m in args.models.split(",") if m]
    unknown = sorted(set(chosen) - set(MODELS.values()))
    if unknown:
        parser.error(f"unknown model(s) {unknown}; use {', '.join(MODELS.values())}")
    if not args.tables_only:
        for seed in args.seeds.split(","):
            for input_size in args.inputs.split(","):
                for (config, variant), name in MODELS.items():
                    if name in chosen:
                        ltsf(["--dataset", args.dataset, "--models", config, "--variant", variant, "--horizons",
                              args.horizons, "--seeds", seed, "--input-size", input_size, "--num-threads",
                              str(args.num_threads), "--results", str(args.results)], root=HERE)
    replace_section(args.results.parent.parent / "RESULTS.md", "long-input", table(args.results),
                    title="Long look-backs: test error against the input length")
    return 0


if __name__ == "__main__":
    sys.exit(main())
