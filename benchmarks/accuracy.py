"""The accuracy studies in RESULTS.md: one-seed screens of single options, and the benchmark
configuration built from the library's defaults one option at a time, for RSA and its Transformer twin.

    python benchmarks/accuracy.py [--results benchmarks/results/ltsf.csv]
                                  [--screen benchmarks/results/screen.csv]
                                  [--chain NAME NAME ...]   # default: CHAIN below

Variants are named by the options they change (benchmarks/configs/RSA.json and Transformer.json).
The chain lists RSA configurations that each change one option of the one before, ending at the
configuration of the earlier published long-horizon tables: the library's learning rate and gate
start with the MSE loss at a constant rate and no statistical start (``loss=mse,lr_schedule=null,start=null``),
then learning rate 1e-4 (``learning_rate=1e-4,loss=mse,lr_schedule=null,start=null``), then the gate started at
-2 (``gate_init=-2,learning_rate=1e-4,loss=mse,lr_schedule=null,start=null``). The Transformer steps through the
twins of those names (the same options, less RSA's own): the first two.

Section "accuracy-screen": each variant of the screen (rows of screen.csv, written by
``benchmarks/ltsf.py --results benchmarks/results/screen.csv``) against the run of its reference with
the same seed in the same cell (from ltsf.csv): test MSE, its change and the epoch whose weights were
kept. A variant's reference is the configuration before it in the chain, or, for a variant off the
chain, the chain's configuration with the most options that the variant also sets.
Section "accuracy-steps": each step of the chain, per model, paired by seed per data set and horizon,
with the average over the four horizons where every horizon has the same seeds. Nothing is trained:
the tables are made from the committed CSV files. The runs behind them:

    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 336,720 --seeds 0 \\
        --variant V --results benchmarks/results/screen.csv --num-threads 1
    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --variant V --seeds 0,1,2 --num-threads 1
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rem_init import markdown, mean_std, paired_cells, twin_variants
from tsrsa.benchmarking.configs import parse_variant_name
from tsrsa.benchmarking.results import at_protocol_input, read_results, replace_section

HERE = Path(__file__).resolve().parent
_SHORT = {"RSAForecaster": "RSA", "TransformerForecaster": "Transformer"}
_MSE = "loss=mse,lr_schedule=null,start=null"  # the MSE loss at a constant rate, no start: as the earlier tables ran
CHAIN = [_MSE, f"learning_rate=1e-4,{_MSE}", f"gate_init=-2,learning_rate=1e-4,{_MSE}"]


def reference_of(variant: str, chain: list[str]) -> str:
    """The configuration a screened variant is compared with: for a name of the chain the name before
    it; otherwise, among the chain's names whose options the variant all sets, the one it sets most
    of to the same value ("loss=mse,lr_schedule=null,start=null" for
    "dropout=0.3,loss=mse,lr_schedule=null,start=null" and for "loss=mse,lr_schedule=cosine,start=null")."""
    if variant in chain[1:]:
        return chain[chain.index(variant) - 1]
    options = parse_variant_name(variant)
    # the chain's names whose every option the variant sets too (to the same value or to the one it changes)
    inside = [name for name in chain if name != variant and set(parse_variant_name(name)) <= set(options)]
    if not inside:
        raise ValueError(f"no configuration of the chain {chain} is part of variant {variant!r}")
    return max(inside, key=lambda name: sum(options[k] == v for k, v in parse_variant_name(name).items()))


def chain_of(model: str, chain: list[str], twin_of: dict | None) -> list[str]:
    """The chain for ``model``: RSA's names as they are, another model's the twins of them (``twin_of``:
    RSA name -> that model's name; a name missing there is its own twin), repeats dropped."""
    if model == "RSAForecaster" or not twin_of:
        return list(chain)
    return list(dict.fromkeys(twin_of.get(name, name) for name in chain))


def screen_table(screen: pd.DataFrame, results: pd.DataFrame, chain: list[str]) -> pd.DataFrame:
    """Per reference configuration, a row holding its runs and then one row per (model, variant) of the
    screen that changes it; per cell (data set, horizon, seed) the MSE with its change from the
    reference's run of the same seed, and the best epoch."""
    full = results[results["train_fraction"] == 1.0]
    screen = screen.assign(reference=[reference_of(v, chain) for v in screen["variant"]])
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


def step_table(results: pd.DataFrame, chain: list[str], twin_of: dict | None = None) -> pd.DataFrame:
    """Each step of the chain (before -> after), per model over the names of its chain that it ran,
    one row per data set: the average over the four horizons paired by seed (where all four share the
    compared seeds), and per horizon the paired difference with the seeds the step wins."""
    full = results[results["train_fraction"] == 1.0]
    rows = []
    for model, runs in full.groupby("model", sort=False):
        names = [name for name in chain_of(model, chain, twin_of) if name in set(runs["variant"])]
        for before, after in zip(names, names[1:]):
            for dataset, cell in runs.groupby("dataset", sort=False):
                row = _step_row(cell, _SHORT.get(model, model), dataset, before, after)
                if row is not None:
                    rows.append(row)
    return pd.DataFrame(rows)


def _step_row(cell: pd.DataFrame, model: str, dataset: str, before: str, after: str) -> dict | None:
    per_horizon, averages = [], {"after": [], "before": []}
    for h in sorted(cell["horizon"].unique()):
        at = cell[cell["horizon"] == h]
        paired = paired_cells(at[at["variant"] == after].set_index("seed"),
                         at[at["variant"] == before].set_index("seed"), ("after", "before"))
        if paired is None:
            continue
        new, old, cells = paired
        averages["after"].append(new["mse"].rename(h))
        averages["before"].append(old["mse"].rename(h))
        per_horizon.append(f"H{int(h)} {cells['after − before'].split(' ± ')[0]} ({cells['after wins']})")
    if not per_horizon:
        return None
    row = {"model": model, "change": f"{before} → {after}", "dataset": dataset, "seeds": "",
           "after MSE (average)": "", "before MSE (average)": "", "after − before": "", "after wins": ""}
    if len(averages["after"]) == 4:  # every horizon compared: the average over horizons, per seed
        new = pd.concat(averages["after"], axis=1).dropna().mean(axis=1)
        old = pd.concat(averages["before"], axis=1).dropna().mean(axis=1)
        seeds = new.index.intersection(old.index)
        if len(seeds):
            diff = new[seeds] - old[seeds]
            row.update({"seeds": len(seeds), "after MSE (average)": mean_std(new[seeds]),
                        "before MSE (average)": mean_std(old[seeds]), "after − before": mean_std(diff),
                        "after wins": f"{int((diff < 0).sum())}/{len(seeds)}"})
    row["per horizon: after − before (after wins)"] = "; ".join(per_horizon)
    return row


SCREEN_TEXT = (
    "One-seed screens of single options for RSAForecaster, seed 0, on ETTh1 at H336 and H720 (the "
    "gate start also on ETTh2 at H720), each variant against its reference run of the same seed and "
    "cell: the options dropout 0.3, weight decay 0.05 and a cosine or halving learning-rate schedule "
    f"and learning rate 1e-4 (`{CHAIN[1]}`) against the library's learning rate and gate start at the "
    f"MSE loss and a constant rate (`{CHAIN[0]}`); the gate started at -2 (`{CHAIN[2]}`) against "
    f"`{CHAIN[1]}`; a learning rate of the REM values and gates of their own (`rem_learning_rate`) "
    f"against `{CHAIN[2]}`. "
    "Input 96, test MSE on the scaled data; the change is variant − reference; best epoch: the epoch "
    "of the lowest validation loss, whose weights are kept. One seed: a screen, not a result."
)


def main(argv=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "results" / "ltsf.csv"))
    parser.add_argument("--screen", default=str(HERE / "results" / "screen.csv"))
    parser.add_argument("--chain", nargs="+", default=CHAIN,
                        help="RSA configurations that each change one option of the one before, ending at the default")
    args = parser.parse_args(argv)
    results = at_protocol_input(read_results(args.results))
    screen = screen_table(at_protocol_input(read_results(args.screen)), results, args.chain)
    body = (
        f"{SCREEN_TEXT}\n\n{markdown(screen)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 336,720 --seeds 0 "
        "--variant V --results benchmarks/results/screen.csv --num-threads 1` (V: each variant above; "
        f"ETTh2 H720 for `{CHAIN[2]}`); table: `python benchmarks/accuracy.py`."
    )
    replace_section(HERE / "RESULTS.md", "accuracy-screen", body, title="Screens of single options")
    twin_of = twin_variants()
    steps = step_table(results, args.chain, twin_of)
    body = (
        "The benchmark configuration built from the library's defaults one option at a time, for both twins, "
        f"paired by seed: RSA {' → '.join(f'`{name}`' for name in args.chain)} (learning rate 1e-3 → 1e-4, "
        "then the gate started at -2 instead of 0); the Transformer, which has no gate, "
        f"{' → '.join(f'`{name}`' for name in chain_of('TransformerForecaster', args.chain, twin_of))}. "
        "Input 96, test MSE on the scaled data, all training rows, 3 seeds. The average is each seed's mean "
        "over the four horizons, then mean ± std over seeds; per horizon: the mean paired difference and "
        "the seeds on which the step lowers the MSE.\n\n"
        f"{markdown(steps)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset D --models M --variant V --seeds 0,1,2 --num-threads 1` "
        "(D: ETTh1, ETTh2, national_illness; V: each name of the model's chain); table: "
        "`python benchmarks/accuracy.py`."
    )
    replace_section(HERE / "RESULTS.md", "accuracy-steps", body,
                    title="The benchmark configuration, one option at a time")
    print(markdown(screen))
    print(markdown(steps))
    return screen, steps


if __name__ == "__main__":
    main()
