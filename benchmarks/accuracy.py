"""The accuracy study in RESULTS.md: a one-seed screen of training options, then the chosen one
against the configuration it would replace, for RSA and its Transformer twin alike.

    python benchmarks/accuracy.py [--results benchmarks/results/ltsf.csv]
                                  [--screen benchmarks/results/screen.csv]
                                  [--candidate lr1e-4] [--baseline default]

Section "accuracy-screen": each variant of the screen (rows of screen.csv, written by
``benchmarks/ltsf.py --results benchmarks/results/screen.csv``) against the baseline's run with the
same seed in the same cell (from ltsf.csv): test MSE, its change and the epoch whose weights were kept.
Section "accuracy-candidate": the candidate variant against the baseline, paired by seed, per model,
data set and horizon, and the average over the four horizons where every horizon has the same seeds.
The runs behind them:

    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 336,720 --seeds 0 \\
        --variant V --results benchmarks/results/screen.csv --num-threads 1
    python benchmarks/ltsf.py --dataset ETTh1 --models RSA,Transformer --variant lr1e-4 --seeds 0,1,2 --num-threads 1
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rem_init import _epochs, _mean_std, _paired, markdown
from tsrsa.benchmarking.results import read_results, replace_section

HERE = Path(__file__).resolve().parent
_SHORT = {"RSAForecaster": "RSA", "TransformerForecaster": "Transformer"}


def screen_table(screen: pd.DataFrame, results: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per (model, variant) of the screen, under a first row holding the baseline's runs;
    per cell (data set, horizon, seed) the MSE with its change from the baseline, and the best epoch."""
    base = results[(results["variant"] == baseline) & (results["train_fraction"] == 1.0)]
    reference = {"model": ", ".join(_SHORT.get(m, m) for m in screen["model"].unique()),
                 "variant": f"{baseline} (reference)"}
    rows = []
    for (model, variant), runs in screen.groupby(["model", "variant"], sort=False):
        row = {"model": _SHORT.get(model, model), "variant": variant}
        for run in runs.sort_values(["dataset", "horizon", "seed"]).itertuples():
            ref = base[(base["model"] == model) & (base["dataset"] == run.dataset)
                       & (base["horizon"] == run.horizon) & (base["seed"] == run.seed)]
            cell = f"{run.dataset} H{run.horizon} seed {run.seed}"
            change = f" ({run.mse - ref['mse'].iloc[0]:+.4f})" if len(ref) else ""
            row[f"{cell}: MSE (change)"] = f"{run.mse:.4f}{change}"
            row[f"{cell}: best epoch"] = _epoch(run.best_epoch)
            reference[f"{cell}: MSE (change)"] = f"{ref['mse'].iloc[0]:.4f}" if len(ref) else ""
            reference[f"{cell}: best epoch"] = _epoch(ref["best_epoch"].iloc[0]) if len(ref) else ""
        rows.append(row)
    return pd.DataFrame([reference, *rows]).fillna("")


def _epoch(value) -> int | str:
    return "" if pd.isna(value) else int(value)


def candidate_table(results: pd.DataFrame, candidate: str, baseline: str) -> pd.DataFrame:
    """The candidate against the baseline, paired by seed, per model, data set and horizon, with each
    data set's average over the four horizons (only where all four share the compared seeds)."""
    full = results[results["train_fraction"] == 1.0]
    rows = []
    for (model, dataset), cell in full.groupby(["model", "dataset"], sort=False):
        if candidate not in set(cell["variant"]):
            continue
        averages = {candidate: [], baseline: []}
        horizons = sorted(cell["horizon"].unique())
        for h in horizons:
            at = cell[cell["horizon"] == h]
            paired = _paired(at[at["variant"] == candidate].set_index("seed"),
                             at[at["variant"] == baseline].set_index("seed"), (candidate, baseline))
            if paired is None:
                continue
            new, old, cells = paired
            averages[candidate].append(new["mse"].rename(h))
            averages[baseline].append(old["mse"].rename(h))
            rows.append({"model": _SHORT.get(model, model), "dataset": dataset, "horizon": str(int(h)), **cells,
                         "best epoch": f"{_epochs(new)} / {_epochs(old)}"})
        if len(averages[candidate]) == 4:  # every horizon compared: the average over horizons, per seed
            new = pd.concat(averages[candidate], axis=1).dropna().mean(axis=1)
            old = pd.concat(averages[baseline], axis=1).dropna().mean(axis=1)
            seeds = new.index.intersection(old.index)
            if len(seeds):
                diff = new[seeds] - old[seeds]
                rows.append({"model": _SHORT.get(model, model), "dataset": dataset, "horizon": "**average**",
                             "seeds": len(seeds), f"{candidate} MSE": _mean_std(new[seeds]),
                             f"{baseline} MSE": _mean_std(old[seeds]), f"{candidate} − {baseline}": _mean_std(diff),
                             f"{candidate} wins": f"{int((diff < 0).sum())}/{len(seeds)}", "best epoch": ""})
    return pd.DataFrame(rows)


def main(argv=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "results" / "ltsf.csv"))
    parser.add_argument("--screen", default=str(HERE / "results" / "screen.csv"))
    parser.add_argument("--candidate", default="lr1e-4", help="the variant compared over every seed")
    parser.add_argument("--baseline", default="default", help="the variant it is compared with")
    args = parser.parse_args(argv)
    results = read_results(args.results)
    screen = screen_table(read_results(args.screen), results, args.baseline)
    body = (
        f"A screen of training options for RSAForecaster on the two weakest ETTh1 cells (H336, H720), seed 0, "
        f"each variant of benchmarks/configs/RSA.json against the `{args.baseline}` run of the same seed "
        "(input 96, test MSE on the scaled data; the change is variant − reference; best epoch: the "
        "epoch of the lowest validation loss, whose weights are kept). One seed: a screen, not a result; "
        "a variant moves on only if it helps in both cells.\n\n"
        f"{markdown(screen)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 336,720 --seeds 0 "
        "--variant V --results benchmarks/results/screen.csv --num-threads 1`; table: "
        "`python benchmarks/accuracy.py`."
    )
    replace_section(HERE / "RESULTS.md", "accuracy-screen", body, title="Accuracy: a screen of training options")
    candidate = candidate_table(results, args.candidate, args.baseline)
    body = (
        f"Variant `{args.candidate}` against `{args.baseline}` for both twins (identical options apart from "
        "the REM branch), paired by seed; input 96, test MSE on the scaled data, all training rows. "
        "The average row is each seed's mean over the four horizons.\n\n"
        f"{markdown(candidate)}\n\n"
        f"Runs: `python benchmarks/ltsf.py --dataset D --models RSA,Transformer --variant {args.candidate} "
        "--seeds 0,1,2 --num-threads 1`; table: `python benchmarks/accuracy.py`."
    )
    replace_section(HERE / "RESULTS.md", "accuracy-candidate", body,
                    title="Accuracy: the candidate against the configuration it would replace")
    print(markdown(screen))
    print(markdown(candidate))
    return screen, candidate


if __name__ == "__main__":
    main()
