"""The accuracy study in RESULTS.md: one-seed screens of options, then each promoted option against
the configuration it replaced, for RSA and its Transformer twin alike.

    python benchmarks/accuracy.py [--results benchmarks/results/ltsf.csv]
                                  [--screen benchmarks/results/screen.csv]
                                  [--lineage lr1e-3,gate0,default]

The lineage lists the configurations that were the default in turn, oldest first: lr1e-3 (lr 1e-3,
gate at 0) until stop 14, gate0 (lr 1e-4, gate at 0) in stop 14, default (lr 1e-4, gate at -2) since
stop 15. Rows were relabelled at each promotion, so every name says what it ran
(benchmarks/configs/RSA.json and Transformer.json define them).

Section "accuracy-screen": each variant of the screen (rows of screen.csv, written by
``benchmarks/ltsf.py --results benchmarks/results/screen.csv``) against the run of the configuration
it changes, with the same seed in the same cell (from ltsf.csv): test MSE, its change and the epoch
whose weights were kept. The configuration a variant changes is the name before its last "+", or, for
a name of the lineage, the one before it.
Section "accuracy-candidate": each promotion of the lineage, per model (a model skips the names it has
no runs of: the Transformer went from lr1e-3 to default), paired by seed, per data set and horizon, with
the average over the four horizons where every horizon has the same seeds. The runs behind the tables:

    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 336,720 --seeds 0 \\
        --variant V --results benchmarks/results/screen.csv --num-threads 1
    python benchmarks/ltsf.py --dataset ETTh1 --models RSA,Transformer [--variant V] --seeds 0,1,2 --num-threads 1
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rem_init import _epochs, _mean_std, _paired, markdown
from tsrsa.benchmarking.results import read_results, replace_section

HERE = Path(__file__).resolve().parent
_SHORT = {"RSAForecaster": "RSA", "TransformerForecaster": "Transformer"}


def reference_of(variant: str, lineage: list[str]) -> str:
    """The configuration a screened variant changes: the part before its last "+" ("lr1e-3" for
    "lr1e-3+dropout0.3"); for a name of the lineage the name before it ("gate0" for "default");
    otherwise the lineage's first name."""
    if "+" in variant:
        return variant.rsplit("+", 1)[0]
    if variant in lineage[1:]:
        return lineage[lineage.index(variant) - 1]
    return lineage[0]


def screen_table(screen: pd.DataFrame, results: pd.DataFrame, lineage: list[str]) -> pd.DataFrame:
    """Per reference configuration, a row holding its runs and then one row per (model, variant) of the
    screen that changes it; per cell (data set, horizon, seed) the MSE with its change from the
    reference's run of the same seed, and the best epoch."""
    full = results[results["train_fraction"] == 1.0]
    screen = screen.assign(reference=[reference_of(v, lineage) for v in screen["variant"]])
    rows = []
    for ref_name, group in screen.groupby("reference", sort=False):
        base = full[full["variant"] == ref_name]
        reference = {"model": ", ".join(_SHORT.get(m, m) for m in group["model"].unique()),
                     "variant": f"{ref_name} (reference)"}
        variants = []
        for (model, variant), runs in group.groupby(["model", "variant"], sort=False):
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
            variants.append(row)
        rows += [reference, *variants]
    return pd.DataFrame(rows).fillna("")


def _epoch(value) -> str:
    return "" if pd.isna(value) else str(int(value))  # text: a column of blanks and numbers stays "3", not 3.0


def candidate_table(results: pd.DataFrame, lineage: list[str]) -> pd.DataFrame:
    """Each promotion of the lineage (before -> after), per model over the names that model ran, paired
    by seed per data set and horizon, with each data set's average over the four horizons (only where
    all four share the compared seeds)."""
    full = results[results["train_fraction"] == 1.0]
    rows = []
    for model, runs in full.groupby("model", sort=False):
        names = [name for name in lineage if name in set(runs["variant"])]
        for before, after in zip(names, names[1:]):
            for dataset, cell in runs.groupby("dataset", sort=False):
                rows += _promotion_rows(cell, _SHORT.get(model, model), dataset, before, after)
    return pd.DataFrame(rows)


def _promotion_rows(cell: pd.DataFrame, model: str, dataset: str, before: str, after: str) -> list[dict]:
    head = {"model": model, "change": f"{before} → {after}", "dataset": dataset}
    rows, averages = [], {"after": [], "before": []}
    for h in sorted(cell["horizon"].unique()):
        at = cell[cell["horizon"] == h]
        paired = _paired(at[at["variant"] == after].set_index("seed"),
                         at[at["variant"] == before].set_index("seed"), ("after", "before"))
        if paired is None:
            continue
        new, old, cells = paired
        averages["after"].append(new["mse"].rename(h))
        averages["before"].append(old["mse"].rename(h))
        rows.append({**head, "horizon": str(int(h)), **cells, "best epoch (after / before)": f"{_epochs(new)} / {_epochs(old)}"})
    if len(averages["after"]) == 4:  # every horizon compared: the average over horizons, per seed
        new = pd.concat(averages["after"], axis=1).dropna().mean(axis=1)
        old = pd.concat(averages["before"], axis=1).dropna().mean(axis=1)
        seeds = new.index.intersection(old.index)
        if len(seeds):
            diff = new[seeds] - old[seeds]
            rows.append({**head, "horizon": "**average**", "seeds": len(seeds), "after MSE": _mean_std(new[seeds]),
                         "before MSE": _mean_std(old[seeds]), "after − before": _mean_std(diff),
                         "after wins": f"{int((diff < 0).sum())}/{len(seeds)}", "best epoch (after / before)": ""})
    return rows


def main(argv=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "results" / "ltsf.csv"))
    parser.add_argument("--screen", default=str(HERE / "results" / "screen.csv"))
    parser.add_argument("--lineage", default="lr1e-3,gate0,default",
                        help="the configurations that were the default in turn, oldest first")
    args = parser.parse_args(argv)
    lineage = args.lineage.split(",")
    results = read_results(args.results)
    screen = screen_table(read_results(args.screen), results, lineage)
    body = (
        "One-seed screens of options for RSAForecaster on the two weakest ETTh1 cells (H336, H720), seed 0, "
        "each against the run of the same seed of the configuration it changes: `lr1e-3+V` against `lr1e-3` "
        "(the screen of stop 13, around lr 1e-3 with the gate at 0), `gate0` (lr 1e-4, the screen's winner) "
        "against `lr1e-3`, `default` (the gate started at -2 instead of 0, the screen of stop 14, which also "
        "ran ETTh2 H720) against `gate0`, `default+V` against `default` (stop 15: the REM values and gates "
        "stepped at a rate of their own, `rem_learning_rate` 1e-3 or 1e-2). Input 96, test MSE on the scaled "
        "data; the change is variant − reference; best epoch: the epoch of the lowest validation loss, whose weights are kept. One seed: a "
        "screen, not a result; a variant moves on only if it helps in both cells.\n\n"
        f"{markdown(screen)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 336,720 --seeds 0 "
        "--variant V --results benchmarks/results/screen.csv --num-threads 1` (rows relabelled since: the "
        "stop-13 runs of `lr1e-4` are `gate0`, the stop-14 runs of `default+gate_init=-2` are `default`); "
        "table: `python benchmarks/accuracy.py`."
    )
    replace_section(HERE / "RESULTS.md", "accuracy-screen", body, title="Accuracy: screens of training options")
    candidate = candidate_table(results, lineage)
    body = (
        "Each option that became the default against the configuration it replaced, for both twins (the "
        f"lineage {' → '.join(f'`{name}`' for name in lineage)}; the Transformer has no gate, so it went from "
        "`lr1e-3` to `default` in one step), paired by seed; input 96, test MSE on the scaled data, all "
        "training rows. The average row is each seed's mean over the four horizons.\n\n"
        f"{markdown(candidate)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset D --models RSA,Transformer [--variant V] "
        "--seeds 0,1,2 --num-threads 1` (V: each name of the lineage; RSA only for `gate0`); table: "
        "`python benchmarks/accuracy.py`."
    )
    replace_section(HERE / "RESULTS.md", "accuracy-candidate", body,
                    title="Accuracy: each chosen option against the configuration it replaced")
    print(markdown(screen))
    print(markdown(candidate))
    return screen, candidate


if __name__ == "__main__":
    main()
