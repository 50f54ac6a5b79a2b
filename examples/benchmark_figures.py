"""Our long-horizon figures beside the published ones, cell by cell (nothing is trained).

The plain-script twin of notebooks/03_benchmarks.ipynb. Reads benchmarks/results/ltsf.csv
(written by ``tsrsa benchmark`` / ``python benchmarks/ltsf.py``) and the published anchors of
``tsrsa.benchmarking.anchors``::

    python examples/benchmark_figures.py                        # prints the comparison table
    python examples/benchmark_figures.py --output-dir figures   # also one MSE plot per data set
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from tsrsa.benchmarking import read_results
from tsrsa.benchmarking.anchors import ANCHORS, SOURCE

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "ltsf.csv"
HORIZONS = (96, 192, 336, 720)


def our_cells(results: Path) -> pd.DataFrame:
    """Default configurations on all training windows at input 96: mean and std over seeds."""
    rows = read_results(results)
    if rows.empty:
        raise ValueError(f"{results} holds no runs; add some with 'tsrsa benchmark --dataset ETTh1 --models DLinear'")
    rows = rows[(rows["variant"] == "default") & (rows["train_fraction"] == 1.0) & (rows["input_size"] == 96)]
    return (rows.assign(model=rows["model"].str.removesuffix("Forecaster"))
            .groupby(["dataset", "horizon", "model"])
            .agg(mse=("mse", "mean"), mse_std=("mse", "std"), mae=("mae", "mean"), seeds=("seed", "nunique"))
            .reset_index())


def published_cells() -> pd.DataFrame:
    return pd.DataFrame([
        {"dataset": dataset, "horizon": horizon, "model": model, "mse": cell[0], "mae": cell[1]}
        for model, by_dataset in ANCHORS.items() for dataset, by_horizon in by_dataset.items()
        for horizon, cell in by_horizon.items() if horizon != "avg" and cell[0] is not None
    ])


def comparison(ours: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """One row per (data set, horizon) we ran: each model's MSE, ours and published, side by side."""
    wide_ours = ours.pivot_table(index=["dataset", "horizon"], columns="model", values="mse")
    wide_published = published.pivot_table(index=["dataset", "horizon"], columns="model", values="mse")
    wide_published.columns = [f"{m} (published)" for m in wide_published.columns]
    return wide_ours.join(wide_published, how="left")


def plot(ours: pd.DataFrame, published: pd.DataFrame, dataset: str, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for k, (model, cells) in enumerate(ours[ours["dataset"] == dataset].groupby("model", sort=False)):
        x = [HORIZONS.index(h) - 0.15 for h in cells["horizon"]]
        ax.errorbar(x, cells["mse"], yerr=cells["mse_std"].fillna(0), fmt="o", color=f"C{k}", label=model)
    for k, (model, cells) in enumerate(published[published["dataset"] == dataset].groupby("model", sort=False)):
        x = [HORIZONS.index(h) + 0.15 for h in cells["horizon"]]
        ax.plot(x, cells["mse"], "s", mfc="none", color=f"C{k + 5}", label=f"{model} (published)")
    ax.set_xticks(range(len(HORIZONS)), [f"H{h}" for h in HORIZONS])
    ax.set(title=f"{dataset}, input 96", ylabel="test MSE (scaled data)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.savefig(path, dpi=110)


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"results CSV (default {RESULTS})")
    parser.add_argument("--output-dir", type=Path, default=None, help="write one plot per data set here")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        parser.error(f"{args.results} not found; run from a tsrsa checkout or give --results")

    ours, published = our_cells(args.results), published_cells()
    table = comparison(ours, published)
    print(f"test MSE on the scaled data; published: {SOURCE}\n")
    print(table.round(3).to_string())
    if args.output_dir is not None:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for dataset in ours["dataset"].unique():
            plot(ours, published, dataset, args.output_dir / f"{dataset}.png")
        print(f"\nplots written to {args.output_dir}")
    return table


if __name__ == "__main__":
    main()
