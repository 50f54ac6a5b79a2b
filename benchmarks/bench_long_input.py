"""Long look-backs: test MSE against the input length, next to the published long-look-back figures.

    python benchmarks/bench_long_input.py --dataset ETTh1,ETTm1 --horizons 96,336 --inputs 96,336,720,1440 \\
        --seeds 0 --num-threads 1
    python benchmarks/bench_long_input.py --tables-only
    python benchmarks/bench_long_input.py --speed [--dataset ETTh1 --inputs 96,336,720,1440,2880]

Each cell is one run of the long-horizon protocol (``benchmarks/ltsf.py``: Time-Series-Library's
splits and training recipe, the files of ``benchmarks/configs/``) at a longer input, for the
block-recurrent model (the Transformer's configuration with ``attention="block_recurrent"``, its
default blocks of 8 tokens and 8 states, fixed gate), the softmax Transformer, RSA and DLinear. Rows
go to ``benchmarks/results/ltsf.csv`` (they carry their input size); the RESULTS.md section
"long-input" gathers them per data set and horizon, with the published figures: PatchTST at input
512 and DLinear at 336 (their papers' tables), and ``--plot`` (``benchmarks/results/long_input.png``)
draws them against the input length. Cells are run inputs first, then seeds, so that a
stopped grid has every input of the first seed.

``--speed`` measures what a fit costs against the input length, for the same models and
configurations: each (model, input) trains in a fresh process on the data set's training rows for
two epochs of ``--batches`` batches (no validation), one CPU thread. *s/epoch*: the second epoch's
seconds per batch times the batches of a full epoch at that input; *peak MB*: how far the
process's peak resident memory rose over the fit. Rows go to
``benchmarks/results/long_input_speed.csv``, the table to the RESULTS.md section
"long-input-speed". The cost per layer and token of each kind is the section "kinds-scaling"
(``bench_kinds.py``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
#: (configuration, variant) -> the name in the table
#: (each ran the earlier tables' configuration: learning rate 1e-4, MSE at a constant rate, RSA's gate at -2)
_EARLIER = "learning_rate=1e-4,loss=mse,lr_schedule=null,start=null"
MODELS = {("Transformer", f"attention=block_recurrent,{_EARLIER}"): "Block-recurrent",
          ("Transformer", _EARLIER): "Transformer", ("RSA", f"gate_init=-2,{_EARLIER}"): "RSA",
          ("DLinear", f"{_EARLIER},weight_decay=0"): "DLinear"}
#: published test MSE at H96/192/336/720: PatchTST/64 at input 512 and DLinear at input 336
ANCHORS = {
    "ETTh1": {"PatchTST (input 512)": (0.370, 0.413, 0.422, 0.447), "DLinear (input 336)": (0.375, 0.405, 0.439, 0.472)},
    "ETTm1": {"PatchTST (input 512)": (0.293, 0.333, 0.369, 0.416), "DLinear (input 336)": (0.299, 0.335, 0.369, 0.425)},
}
HORIZONS = (96, 192, 336, 720)
SPEED_CSV = HERE / "results" / "long_input_speed.csv"
SPEED_COLUMNS = ("date", "dataset", "model", "input_size", "horizon", "batch_size", "batches_timed",
                 "seconds_per_batch", "windows_per_epoch", "seconds_per_epoch", "peak_mb", "params", "machine")


def long_rows(results: Path):
    """The rows of the table's models on the anchored data sets, for every (data set, horizon) that has a run
    at an input above 96, with the table's name of each model in ``name`` (an empty frame if none)."""
    from tsrsa.benchmarking.results import read_results

    rows = read_results(results)
    names = {(cls, variant): name for (config, variant), name in MODELS.items()
             for cls in [{"Transformer": "TransformerForecaster", "RSA": "RSAForecaster",
                          "DLinear": "DLinearForecaster"}[config]]}
    rows = rows[[(m, v) in names for m, v in zip(rows["model"], rows["variant"])]]
    rows = rows[rows["dataset"].isin(list(ANCHORS)) & (rows["train_fraction"] == 1.0)]
    long_rows = rows[rows["input_size"] > 96]
    rows = rows[rows.set_index(["dataset", "horizon"]).index.isin(long_rows.set_index(["dataset", "horizon"]).index)]
    return rows.assign(name=[names[(m, v)] for m, v in zip(rows["model"], rows["variant"])])


def table(results: Path, plot_link: str | None = None) -> str:
    rows = long_rows(results)
    if rows.empty:
        return "No run at an input above 96 yet: `python benchmarks/bench_long_input.py`."
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
            f"Made by `python benchmarks/bench_long_input.py` ({dates})."
            + (f"\n\n![test MSE against the input length]({plot_link})" if plot_link else ""))


def plot(results: Path, path: Path) -> bool:
    """Test MSE (mean over seeds) against the input length, a panel per data set and horizon, the published
    figures as dashed lines; False (nothing written) when there is no long-input run."""
    from matplotlib.figure import Figure

    rows = long_rows(results)
    if rows.empty:
        return False
    panels = list(rows.groupby(["dataset", "horizon"]))
    fig = Figure(figsize=(4.2 * len(panels), 3.4), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False).ravel()
    for ax, ((dataset, h), part) in zip(axes, panels):
        for rank, name in enumerate(MODELS.values()):
            means = part[part["name"] == name].groupby("input_size")["mse"].mean()
            if len(means):
                ax.plot(means.index, means.values, "-o", ms=4, color=f"C{rank}", label=name)
        for style, (anchor, figures) in zip(("--", ":"), ANCHORS[dataset].items()):
            if h in HORIZONS:
                ax.axhline(figures[HORIZONS.index(h)], ls=style, color="grey", lw=1, label=f"{anchor}, published")
        inputs = sorted(part["input_size"].unique())
        ax.set(xscale="log", title=f"{dataset}, H{h}", xlabel="input length (steps)", ylabel="test MSE (scaled)")
        ax.set_xticks(inputs, [str(i) for i in inputs], minor=False), ax.set_xticks([], minor=True)
    handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=3, fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return True


def speed_cell(dataset: str, name: str, input_size: int, h: int, batches: int) -> dict:
    """Train model ``name`` (a table name) at ``input_size`` for two epochs of ``batches`` batches on the
    data set's training rows, in this process; its seconds per batch and epoch and peak memory."""
    import resource

    import torch

    from tsrsa.benchmarking.configs import load_config
    from tsrsa.benchmarking.protocol import fit_frame, load_protocol_data
    from tsrsa.benchmarking.results import explicit_params
    from tsrsa.benchmarking.runner import build_estimator

    torch.set_num_threads(1)
    config_name, variant = {table_name: key for key, table_name in MODELS.items()}[name]
    data = load_protocol_data(dataset, input_size)
    model = build_estimator(load_config(config_name, HERE / "configs"), data, h, seed=0, variant=variant,
                            overrides={"max_epochs": 2, "batches_per_epoch": batches}, num_threads=1)
    frame = fit_frame(data, 0, data.borders.train_end)

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    before = peak_mb()
    model.fit(frame)
    per_batch = float(model.fit_history_["seconds"].iloc[-1]) / batches
    windows = int(model.n_train_windows_)  # every training window: what a full epoch reads
    return {"batch_size": model.batch_size, "batches_timed": batches, "seconds_per_batch": round(per_batch, 6),
            "windows_per_epoch": windows,
            "seconds_per_epoch": round(per_batch * math.ceil(windows / model.batch_size), 1),
            "peak_mb": round(peak_mb() - before, 1), "params": explicit_params(model)}


def speed_table(df) -> str:
    """Seconds per epoch and peak MB per model against the input length, per data set and horizon."""
    df = df.drop_duplicates(["dataset", "horizon", "model", "input_size"], keep="last")
    out = []
    for (dataset, h), part in df.groupby(["dataset", "horizon"], sort=True):
        inputs = sorted(part["input_size"].unique())
        lines = [f"**{dataset}, H{h}** (cells: seconds per epoch, peak MB)", "",
                 "| model | " + " | ".join(f"input {i}" for i in inputs) + " | time per input step, last ÷ first |",
                 "|---|" + "---|" * (len(inputs) + 1)]
        for name in MODELS.values():
            mine = part[part["model"] == name].set_index("input_size").sort_index()
            if mine.empty:
                continue
            cells = [f"{mine.at[i, 'seconds_per_epoch']:,.0f}, {mine.at[i, 'peak_mb']:,.0f}" if i in mine.index
                     else "" for i in inputs]
            first, last = mine.iloc[0], mine.iloc[-1]
            ratio = (last["seconds_per_batch"] / last.name) / (first["seconds_per_batch"] / first.name)
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} ({first.name} → {last.name}) |")
        out.append("\n".join(lines))
    dates, machine = sorted(df["date"].unique()), df["machine"].iloc[0]
    return ("What one epoch of the long-horizon protocol costs each model of the table above against the input "
            "length, on one CPU thread: the second of two epochs of a few batches timed (each cell in a fresh "
            "process) and scaled to the batches of a full epoch at that input (the windows fall slightly as the "
            "input grows); peak MB is the rise of the process's peak resident memory over the fit. *Time per "
            "input step, last ÷ first*: the seconds per batch divided by the input length, at the longest input "
            "over the shortest; about 1 (or less, as fixed costs spread) for a model linear in the input, about "
            "the input factor for a quadratic one.\n\n" + "\n\n".join(out) +
            f"\n\nMade by `python benchmarks/bench_long_input.py --speed` on {', '.join(dates)} ({machine}); rows "
            "in `benchmarks/results/long_input_speed.csv`.")


def run_speed(datasets: list[str], horizons: list[int], inputs: list[int], names: list[str], batches: int,
              csv: Path = SPEED_CSV) -> None:
    """Measure every (data set, horizon, input, model) cell in a fresh process, appending each row as it ends."""
    from tsrsa.benchmarking.results import append_rows, machine_description

    machine = machine_description()
    for dataset in datasets:
        for h in horizons:
            for input_size in inputs:
                for name in names:
                    done = subprocess.run([sys.executable, __file__, "--speed-cell", dataset, name, str(input_size),
                                           str(h), str(batches)], capture_output=True, text=True)
                    if done.returncode != 0:
                        print(f"{dataset} H{h} {name} input {input_size}: failed\n{done.stderr[-2000:]}", flush=True)
                        continue
                    got = json.loads(done.stdout.strip().splitlines()[-1])
                    row = {"date": datetime.date.today().isoformat(), "dataset": dataset, "model": name,
                           "input_size": input_size, "horizon": h, "machine": machine, **got}
                    append_rows(csv, [row], columns=SPEED_COLUMNS)
                    print(f"{dataset} H{h} {name} input {input_size}: {got['seconds_per_epoch']} s/epoch, "
                          f"{got['peak_mb']} MB", flush=True)


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
    parser.add_argument("--plot", type=Path, default=HERE / "results" / "long_input.png")
    parser.add_argument("--tables-only", action="store_true")
    parser.add_argument("--speed", action="store_true",
                        help="measure seconds per epoch and peak memory against the input length instead of fitting")
    parser.add_argument("--batches", type=int, default=10, help="batches per timed epoch of --speed")
    parser.add_argument("--speed-cell", nargs=5, metavar=("DATASET", "MODEL", "INPUT", "H", "BATCHES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    if args.speed_cell:
        dataset, name, input_size, h, batches = args.speed_cell
        print(json.dumps(speed_cell(dataset, name, int(input_size), int(h), int(batches))))
        return 0
    from tsrsa.benchmarking.cli import main as ltsf
    from tsrsa.benchmarking.results import replace_section

    chosen = [m for m in args.models.split(",") if m]
    unknown = sorted(set(chosen) - set(MODELS.values()))
    if unknown:
        parser.error(f"unknown model(s) {unknown}; use {', '.join(MODELS.values())}")
    if args.batches < 1:
        parser.error(f"--batches must be at least 1, got {args.batches}")
    if args.speed and not args.tables_only:
        run_speed(args.dataset.split(","), [int(h) for h in args.horizons.split(",")],
                  [int(i) for i in args.inputs.split(",")], chosen, args.batches)
    elif not args.tables_only:
        for seed in args.seeds.split(","):
            for input_size in args.inputs.split(","):
                for (config, variant), name in MODELS.items():
                    if name in chosen:
                        ltsf(["--dataset", args.dataset, "--models", config, "--variant", variant, "--horizons",
                              args.horizons, "--seeds", seed, "--input-size", input_size, "--num-threads",
                              str(args.num_threads), "--results", str(args.results)], root=HERE)
    results_md = args.results.parent.parent / "RESULTS.md"
    link = os.path.relpath(args.plot, results_md.parent) if plot(args.results, args.plot) else None
    replace_section(results_md, "long-input", table(args.results, link),
                    title="Long look-backs: test error against the input length")
    if SPEED_CSV.exists():
        import pandas as pd

        replace_section(results_md, "long-input-speed", speed_table(pd.read_csv(SPEED_CSV)),
                        title="Long look-backs: training cost against the input length")
    return 0


if __name__ == "__main__":
    sys.exit(main())
