"""Test error against training length (the RSA paper's Figure 1) on the simulated processes, with and
without the statistical start.

    python benchmarks/sample_size.py                 # reads short_series.csv, writes the figure and section

Curves per process (mean test MSE over seeds, each seed its own path; scaled units): the true model
(its structure, coefficients estimated), ETS and ARIMA, the LSTM, the twin (``TransformerForecaster``)
and RSA at the library's defaults, the twin and RSA with ``start="ar"``, and the AR start alone
(computed here, as in ``start_ablation.py``). The runs are those of ``benchmarks/short_series.py
--datasets simulated`` (and with ``--params '{"start": "ar"}'``) at lengths 200 to 2,000.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from start_ablation import is_default, start_alone  # noqa: E402
from tsrsa.benchmarking.results import replace_section  # noqa: E402
from tsrsa.benchmarking.short_series import make_cell  # noqa: E402
from tsrsa.benchmarking.simulated import PROCESSES  # noqa: E402

#: curve name -> (the rows' model, the start a network ran with, or 'stat' for a statistical model's rows)
CURVES = {"true model": ("true model", "stat"), "ETS": ("ETS", "stat"), "ARIMA": ("ARIMA", "stat"),
          "LSTM": ("LSTMForecaster", None), "twin": ("TransformerForecaster", None), "RSA": ("RSAForecaster", None),
          "S + twin": ("TransformerForecaster", "ar"), "S + RSA": ("RSAForecaster", "ar")}


def curves(short: pd.DataFrame, base: dict | None = None) -> pd.DataFrame:
    """Mean test MSE and seeds per (process, length, curve), the start alone included."""
    sim = short[short["dataset"].isin(list(PROCESSES))]
    parts = []
    for name, (model, start) in CURVES.items():
        rows = sim[sim["model"] == model]
        if start != "stat":
            rows = rows[rows["params"].map(lambda p: is_default(p, start, model, base))]
        rows = rows.sort_values("date").groupby(["dataset", "train_length", "seed"], as_index=False).last()
        parts.append(rows[["dataset", "train_length", "seed", "test_mse"]].assign(curve=name))
    table = pd.concat(parts, ignore_index=True)
    cells = table[table["curve"] == "RSA"][["dataset", "train_length", "seed"]].drop_duplicates()
    alone = [{"dataset": c.dataset, "train_length": c.train_length, "seed": c.seed, "curve": "S alone",
              "test_mse": start_alone(make_cell(c.dataset, int(c.train_length), int(c.seed), None), "ar")["test"]}
             for c in cells.itertuples()]
    table = pd.concat([table, pd.DataFrame(alone)], ignore_index=True)
    return table.groupby(["dataset", "train_length", "curve"]).agg(mse=("test_mse", "mean"),
                                                                   seeds=("test_mse", "size")).reset_index()


#: ETTh1 at fractions of its training part (the long-horizon protocol: its 7 columns, input 96, horizon 96):
#: curve -> (the rows' model, the variant of benchmarks/configs: the library's defaults without a statistical
#: start, and with the AR start)
ETT_CURVES = {"LSTM": ("LSTMForecaster", "start=null"), "twin": ("TransformerForecaster", "start=null"),
              "RSA": ("RSAForecaster", "start=null"), "S + twin": ("TransformerForecaster", "start=ar"),
              "S + RSA": ("RSAForecaster", "start=ar")}
ETT_FRACTIONS = (0.05, 0.2, 1.0)
ETT_TRAIN_STEPS = 8640  # ETTh1's training part: twelve months of hours
ETT_NAME = "ETTh1 (7 columns, H96)"


def ett_curves(ltsf: pd.DataFrame) -> pd.DataFrame:
    """Mean test MSE and seeds per (fraction's training length, curve) of the ETTh1 runs at the defaults."""
    rows = ltsf[(ltsf["dataset"] == "ETTh1") & (ltsf["horizon"] == 96) & (ltsf["input_size"] == 96)
                & ltsf["train_fraction"].isin(ETT_FRACTIONS)]
    parts = []
    for name, (model, variant) in ETT_CURVES.items():
        mine = rows[(rows["model"] == model) & (rows["variant"] == variant)]
        mine = mine.groupby(["train_fraction", "seed"], as_index=False).last()  # the latest run of each
        parts.append(mine.assign(curve=name))
    table = pd.concat(parts, ignore_index=True)
    if table.empty:
        return pd.DataFrame(columns=["dataset", "train_length", "curve", "mse", "seeds"])
    table["train_length"] = (table["train_fraction"] * ETT_TRAIN_STEPS).round().astype(int)
    out = table.groupby(["train_length", "curve"]).agg(mse=("mse", "mean"), seeds=("mse", "size")).reset_index()
    return out.assign(dataset=ETT_NAME)


def plot(summary: pd.DataFrame, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    datasets = sorted(summary["dataset"].unique())
    fig = Figure(figsize=(4.2 * len(datasets), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    styles = {"true model": "k:", "ETS": "C7--", "ARIMA": "C8--", "LSTM": "C2-", "twin": "C0-", "RSA": "C3-",
              "S + twin": "C0-.", "S + RSA": "C3-.", "S alone": "C1:"}
    for ax, dataset in zip(axes, datasets):
        part = summary[summary["dataset"] == dataset]
        for curve, style in styles.items():
            line = part[part["curve"] == curve].sort_values("train_length")
            if len(line):
                ax.plot(line["train_length"], line["mse"], style, marker="o", markersize=3, label=curve)
        ax.set_xscale("log")
        lengths = sorted(part["train_length"].unique())
        ax.set_xticks(lengths, [str(n) for n in lengths], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_title(dataset, fontsize=9)
        ax.set_xlabel("training steps")
    axes[0].set_ylabel("test MSE (scaled)")
    axes[-1].legend(fontsize=7)
    fig.savefig(path, dpi=110)


def section(summary: pd.DataFrame, figure: str, base: dict | None = None) -> str:
    setting = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in (base or {}).items())
    order = [*CURVES, "S alone"]
    wide = summary.pivot_table(index=["dataset", "train_length"], columns="curve", values="mse")
    wide = wide[[c for c in order if c in wide.columns]]
    lines = ["What: test MSE against training length on the simulated processes (each seed its own path; mean "
             "over seeds, scaled units), the statistical models, the networks at the library's defaults"
             + (f" with {setting}" if setting else "") + ", the "
             "networks with `start=\"ar\"`, and the AR start alone; and on ETTh1 (the long-horizon protocol: its 7 "
             "columns, input 96, horizon 96, MSE in its standardised units) trained on the first 5, 20 and 100 % "
             "of its training part (validation and test unchanged), the networks at the library's defaults "
             "(MAE loss, one-cycle schedule; `--base` applies to the simulated runs only), with and without "
             "`start=\"ar\"`; no statistical model runs in that protocol.\n",
             "| process | n | " + " | ".join(wide.columns) + " |", "|---|---|" + "---|" * len(wide.columns)]
    for (dataset, n), row in wide.iterrows():
        lines.append(f"| {dataset} | {n} | " + " | ".join("" if pd.isna(v) else f"{v:.3f}" for v in row) + " |")
    ett = summary[summary["dataset"] == ETT_NAME]
    if len(ett):
        counts = "; ".join(f"{c.curve} at {c.train_length}: {c.seeds}" for c in ett.itertuples())
        lines.append(f"\nSeeds per ETTh1 point: {counts}.")
    lines.append(f"\n![test MSE against training length]({figure})\n")
    flag = f" --base '{json.dumps(base)}'" if base else ""
    lines.append(f"Command: `python benchmarks/sample_size.py{flag}` (the runs: `benchmarks/short_series.py --datasets "
                 f"simulated`, with and without `--params '{{\"start\": \"ar\"}}'`; for ETTh1 `benchmarks/ltsf.py "
                 f"--dataset ETTh1 --horizons 96 --seeds 0,1 --train-fraction F --models M --variant V`, F in "
                 f"0.05, 0.2 (and 1 without the flag), V each model's defaults as named in `ETT_CURVES`). "
                 f"Date: {dt.date.today()}.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="{}", help="model choices over the defaults, as JSON (e.g. the loss)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    short = pd.read_csv(HERE / "results" / "short_series.csv", dtype={"params": str})
    base = json.loads(args.base)
    ltsf = pd.read_csv(HERE / "results" / "ltsf.csv", dtype={"params": str})
    ett = ett_curves(ltsf)
    summary = pd.concat([curves(short, base), ett], ignore_index=True)
    text = section(summary, "results/sample_size.png", base)
    print(text)
    if not args.no_write:
        plot(summary, HERE / "results" / "sample_size.png")
        replace_section(HERE / "RESULTS.md", "sample-size", text,
                        title="Test error against training length, with and without the statistical start")


if __name__ == "__main__":
    main()
