"""RSA's studies in RESULTS.md: data versus paper start of the REMs, and RSA versus its twin.

    python benchmarks/rem_init.py [--results benchmarks/results/ltsf.csv]

Reads the long-horizon results (rows written by benchmarks/ltsf.py) and compares, cell by cell,
RSAForecaster's default configuration (``rem_init="data"``) with its ``paper-init`` variant, seed
by seed, at each training fraction: test MSE (mean ± std over seeds), the paired difference, how
many seeds the data start wins, and the epoch whose weights were kept (the epoch of the best
validation loss). The plain Transformer twin of the same runs is shown for reference. Writes the
"rem-init" section of benchmarks/RESULTS.md, and the "rsa-twin" section: RSAForecaster against
TransformerForecaster (identical configuration and budget; they differ only by the REM branch),
seed by seed, in every cell where both ran. The runs themselves, one line per cell (seeds 0-2):

    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 96 --seeds 0,1,2 --train-fraction 0.2
    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --variant paper-init --horizons 96 --seeds 0,1,2 --train-fraction 0.2
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from tsrsa.benchmarking.results import read_results, replace_section

HERE = Path(__file__).resolve().parent


def _mean_std(values: pd.Series, digits: int = 3) -> str:
    values = values.dropna()
    if values.empty:
        return ""
    if len(values) == 1:
        return f"{values.iloc[0]:.{digits}f}"
    return f"{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}"


def _epochs(runs: pd.DataFrame) -> str:
    """Mean best epoch over the runs that recorded one ("–" where none did: rows from before the column)."""
    epochs = runs["best_epoch"].dropna()
    return f"{epochs.mean():.1f}" if len(epochs) else "–"


def _paired(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]):
    """Rows of ``a`` and ``b`` (indexed by seed) on their common seeds, and the cells comparing their
    MSE: each mean ± std, the difference a − b and how many seeds ``a`` wins; None without common seeds."""
    seeds = a.index.intersection(b.index)
    if len(seeds) == 0:
        return None
    a, b = a.loc[seeds], b.loc[seeds]
    diff = a["mse"] - b["mse"]
    first, second = names
    return a, b, {
        "seeds": len(seeds), f"{first} MSE": _mean_std(a["mse"]), f"{second} MSE": _mean_std(b["mse"]),
        f"{first} − {second}": _mean_std(diff), f"{first} wins": f"{int((diff < 0).sum())}/{len(seeds)}",
    }


def comparison(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (data set, horizon, train fraction) holding both RSA starts."""
    rsa = df[df["model"] == "RSAForecaster"]
    twin = df[(df["model"] == "TransformerForecaster") & (df["variant"] == "default")]
    rows = []
    for (dataset, h, fraction), cell in rsa.groupby(["dataset", "horizon", "train_fraction"]):
        paired = _paired(cell[cell["variant"] == "default"].set_index("seed"),
                         cell[cell["variant"] == "paper-init"].set_index("seed"), ("data start", "paper start"))
        if paired is None:
            continue
        data, paper, cells = paired
        ref = twin[(twin["dataset"] == dataset) & (twin["horizon"] == h) & (twin["train_fraction"] == fraction)]
        rows.append({
            "dataset": dataset, "horizon": int(h), "train fraction": f"{fraction:g}", **cells,
            "best epoch (data / paper)": f"{_epochs(data)} / {_epochs(paper)}",
            "Transformer MSE": _mean_std(ref["mse"]),
        })
    return pd.DataFrame(rows)


def twin_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """RSA versus the Transformer under the same variant (default first), paired by seed, per cell and
    fraction; variants that only one of them ran (such as RSA's paper-init) have no rows."""
    rows = []
    variants = ["default", *sorted(set(df["variant"]) - {"default"})]
    for variant in variants:
        runs = df[df["variant"] == variant]
        for (dataset, h, fraction), cell in runs.groupby(["dataset", "horizon", "train_fraction"]):
            paired = _paired(cell[cell["model"] == "RSAForecaster"].set_index("seed"),
                             cell[cell["model"] == "TransformerForecaster"].set_index("seed"), ("RSA", "Transformer"))
            if paired is not None:
                rows.append({"variant": variant, "dataset": dataset, "horizon": int(h),
                             "train fraction": f"{fraction:g}", **paired[2]})
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return "_No paired runs yet._"
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "results" / "ltsf.csv"))
    args = parser.parse_args(argv)
    table = comparison(read_results(args.results))
    body = (
        "RSAForecaster's default start (`rem_init=\"data\"`: λ from pooled AR roots, cyclic heads at "
        "the detected periods, dilations from the seasonal period) against the paper's start "
        "(`variant=\"paper-init\"`), same configuration, budget and seeds (benchmarks/configs/RSA.json); "
        "input 96, test MSE on the scaled data; train fraction 0.2 keeps the most recent fifth of the "
        "training windows. Best epoch: the epoch of the lowest validation loss, whose weights are kept "
        "(mean over seeds). Transformer: the plain twin's runs in the same cells.\n\n"
        f"{markdown(table)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset D --models RSA [--variant paper-init] --horizons H "
        "--seeds 0,1,2 [--train-fraction 0.2] --num-threads 1`; table: `python benchmarks/rem_init.py`."
    )
    replace_section(HERE / "RESULTS.md", "rem-init", body, title="REMs started from the data versus the paper's start")
    twins = twin_comparison(read_results(args.results))
    body = (
        "RSAForecaster against TransformerForecaster with identical hyperparameters and budget "
        "(benchmarks/configs/RSA.json and Transformer.json: the same backbone, patches of 4 steps, "
        "batch 32, at most 10 epochs, patience 3); the twins differ only by the REM branch and its gate. "
        "Input 96, test MSE on the scaled data, paired by seed; train fraction 0.2 keeps the most "
        "recent fifth of the training windows. Variant: the configuration both ran (`lr1e-4`: learning "
        f"rate 1e-4 instead of 1e-3, see the accuracy sections).\n\n{markdown(twins)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset ETTh1 --models RSA,Transformer [--variant V] --horizons 96,336 "
        "--seeds 0,1,2 [--train-fraction 0.2] --num-threads 1`; table: `python benchmarks/rem_init.py`."
    )
    replace_section(HERE / "RESULTS.md", "rsa-twin", body, title="RSA versus its Transformer twin")
    print(markdown(table))
    print(markdown(twins))
    return table


if __name__ == "__main__":
    main()
