"""RSA's studies in RESULTS.md: data versus paper start of the REMs, and RSA versus its twin.

    python benchmarks/rem_init.py [--results benchmarks/results/ltsf.csv]

Reads the long-horizon results (rows written by benchmarks/ltsf.py; nothing is trained) and
compares, cell by cell, RSAForecaster's default configuration (``rem_init="data"``) with its
``rem_init=paper`` variant (and any other variant ``V`` with the variant that adds ``rem_init=paper``
to V's options, such as ``loss=mse,lr_schedule=null`` and ``loss=mse,lr_schedule=null,rem_init=paper``),
seed by seed, at each
training fraction: test MSE (mean ± std over seeds), the paired difference, how many seeds the data start
wins, and the epoch whose weights were kept (the epoch of the best validation loss). The plain
Transformer twin of the same runs (its variant with the same shared options) is shown for reference. Writes the
"rem-init" section of benchmarks/RESULTS.md, and the "rsa-twin" section: RSAForecaster against
TransformerForecaster (identical configuration and budget; they differ only by the REM branch),
seed by seed, in every cell where both ran. The runs themselves, one line per cell (seeds 0-2):

    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --horizons 96 --seeds 0,1,2 --train-fraction 0.2
    python benchmarks/ltsf.py --dataset ETTh1 --models RSA --variant rem_init=paper --horizons 96 \\
        --seeds 0,1,2 --train-fraction 0.2
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from tsrsa.benchmarking.configs import parse_variant_name, variant_name
from tsrsa.benchmarking.results import at_protocol_input, read_results, replace_section

HERE = Path(__file__).resolve().parent


def mean_std(values: pd.Series, digits: int = 3) -> str:
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


def paired_cells(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]):
    """Rows of ``a`` and ``b`` (indexed by seed) on their common seeds, and the cells comparing their
    MSE: each mean ± std, the difference a − b and how many seeds ``a`` wins; None without common seeds."""
    seeds = a.index.intersection(b.index)
    if len(seeds) == 0:
        return None
    a, b = a.loc[seeds], b.loc[seeds]
    diff = a["mse"] - b["mse"]
    first, second = names
    return a, b, {
        "seeds": len(seeds), f"{first} MSE": mean_std(a["mse"]), f"{second} MSE": mean_std(b["mse"]),
        f"{first} − {second}": mean_std(diff), f"{first} wins": f"{int((diff < 0).sum())}/{len(seeds)}",
    }


#: the earlier tables' configuration (RSA's, and without RSA's gate) and the MSE loss at a constant rate
MSE = "loss=mse,lr_schedule=null,start=null"
EARLIER = f"learning_rate=1e-4,{MSE}"
EARLIER_RSA = f"gate_init=-2,{EARLIER}"


def paper_variant(variant: str) -> str:
    """The paper-start counterpart of a data-start variant: its options with ``rem_init=paper``
    (``rem_init=paper`` for the default, ``loss=mse,lr_schedule=null,rem_init=paper,start=null`` for
    ``loss=mse,lr_schedule=null,start=null``)."""
    return variant_name({**parse_variant_name(variant), "rem_init": "paper"})


def _data_start(variant: str) -> bool:
    return "rem_init" not in parse_variant_name(variant)


def twin_variants(config_dir=HERE / "configs") -> dict[str, str]:
    """Each RSA variant mapped to the Transformer variant that sets the same options once RSA's own
    arguments (``gate_init``, ``rem_init``, the head allocation...) are left out: ``gate_init=-2,X`` and
    ``X`` both map to the Transformer's ``X`` (X: ``learning_rate=1e-4,loss=mse,lr_schedule=null``). RSA
    variants with no such twin are absent."""
    from tsrsa import RSAForecaster, TransformerForecaster
    from tsrsa.benchmarking.configs import load_config

    own = set(RSAForecaster.param_names()) - set(TransformerForecaster.param_names())
    # and the REM's options by their own names, as the configurations' variants name them
    own |= {old for old, (group, _) in RSAForecaster.moved_params.items() if group == "rem"}
    rsa, transformer = load_config("RSA", config_dir), load_config("Transformer", config_dir)

    def shared(config, variant):
        return {k: v for k, v in config.params_for("", variant).items() if k not in own}

    twins = {}
    for variant in ["default", *rsa.variants]:
        for candidate in ["default", *transformer.variants]:
            if shared(rsa, variant) == shared(transformer, candidate):
                twins[variant] = candidate
                break
    return twins


def comparison(df: pd.DataFrame, twin_of: dict | None = None) -> pd.DataFrame:
    """One row per (variant, data set, horizon, train fraction) holding both RSA starts: each data-start
    variant against its paper-start counterpart (default first), with the Transformer's runs of the twin
    variant (``twin_of``, RSA variant -> Transformer variant; a name missing there is its own twin)."""
    twin_of = twin_of or {}
    rsa = df[df["model"] == "RSAForecaster"]
    starts = [v for v in ["default", *sorted(set(rsa["variant"]) - {"default"})] if _data_start(v)]
    rows = []
    for variant in starts:
        twin = df[(df["model"] == "TransformerForecaster") & (df["variant"] == twin_of.get(variant, variant))]
        for (dataset, h, fraction), cell in rsa.groupby(["dataset", "horizon", "train_fraction"]):
            paired = paired_cells(cell[cell["variant"] == variant].set_index("seed"),
                             cell[cell["variant"] == paper_variant(variant)].set_index("seed"),
                             ("data start", "paper start"))
            if paired is None:
                continue
            data, paper, cells = paired
            ref = twin[(twin["dataset"] == dataset) & (twin["horizon"] == h) & (twin["train_fraction"] == fraction)]
            rows.append({
                "variant": variant, "dataset": dataset, "horizon": int(h), "train fraction": f"{fraction:g}",
                **cells, "best epoch (data / paper)": f"{_epochs(data)} / {_epochs(paper)}",
                "Transformer MSE": mean_std(ref["mse"]),
            })
    return pd.DataFrame(rows)


def twin_comparison(df: pd.DataFrame, twin_of: dict | None = None) -> pd.DataFrame:
    """RSA versus the Transformer, each RSA variant against its twin variant (``twin_of``; a name missing
    there is its own twin), default first, paired by seed, per cell and fraction. Paper-start variants
    are left to ``comparison``; variants without Transformer runs have no rows."""
    twin_of = twin_of or {}
    rsa, transformer = df[df["model"] == "RSAForecaster"], df[df["model"] == "TransformerForecaster"]
    variants = [v for v in ["default", *sorted(set(rsa["variant"]) - {"default"})] if _data_start(v)]
    rows = []
    for variant in variants:
        twin = twin_of.get(variant, variant)
        runs = pd.concat([rsa[rsa["variant"] == variant], transformer[transformer["variant"] == twin]])
        for (dataset, h, fraction), cell in runs.groupby(["dataset", "horizon", "train_fraction"]):
            paired = paired_cells(cell[cell["model"] == "RSAForecaster"].set_index("seed"),
                             cell[cell["model"] == "TransformerForecaster"].set_index("seed"), ("RSA", "Transformer"))
            if paired is not None:
                rows.append({"variant": variant if twin == variant else f"{variant} (Transformer: {twin})",
                             "dataset": dataset, "horizon": int(h), "train fraction": f"{fraction:g}", **paired[2]})
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
    results, twin_of = at_protocol_input(read_results(args.results)), twin_variants()
    table = comparison(results, twin_of)
    body = (
        "RSAForecaster's default start (`rem_init=\"data\"`: λ from pooled AR roots, cyclic heads at "
        "the detected periods, dilations from the seasonal period) against the paper's start "
        "(`rem_init=\"paper\"`), same configuration, budget and seeds (benchmarks/configs/RSA.json). "
        f"Variant: the configuration both starts ran (`{EARLIER_RSA}`: learning rate 1e-4, gate started "
        f"at -2, MSE at a constant rate; `{EARLIER}`: the gate at 0; `{MSE}`: the library's rate and gate "
        "start), "
        "each against the same options with `rem_init=paper`. Input 96, test MSE on the scaled data; train "
        "fraction 0.2 keeps the most recent fifth of the training windows. Best epoch: the epoch of the lowest "
        "validation loss, whose weights are kept (mean over seeds; – where the runs did not record it). "
        "Transformer: the plain twin's runs in the same cells (the Transformer variant with the same shared "
        "options).\n\n"
        f"{markdown(table)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset D --models RSA --variant V --horizons H "
        "--seeds 0,1,2 [--train-fraction 0.2] --num-threads 1` (V: each variant above and the same with "
        "`rem_init=paper`); table: `python benchmarks/rem_init.py`."
    )
    replace_section(HERE / "RESULTS.md", "rem-init", body, title="REMs started from the data versus the paper's start")
    twins = twin_comparison(results, twin_of)
    body = (
        "RSAForecaster against TransformerForecaster with identical hyperparameters and budget "
        "(benchmarks/configs/RSA.json and Transformer.json: the same backbone, patches of 4 steps, "
        "batch 32, at most 10 epochs, patience 3); the twins differ only by the REM branch and its gate. "
        "Input 96, test MSE on the scaled data, paired by seed; train fraction 0.2 keeps the most "
        f"recent fifth of the training windows. Variant: RSA's configuration (`{EARLIER_RSA}`: learning "
        f"rate 1e-4 and the gate started at -2, MSE at a constant rate; `{EARLIER}`: the same with the gate "
        f"at 0; `{MSE}`: the library's rate and gate start), run against the Transformer "
        "variant with the same shared options (named where its name differs).\n\n"
        f"{markdown(twins)}\n\n"
        "Runs: `python benchmarks/ltsf.py --dataset D --models RSA --variant V [--horizons H] "
        "--seeds 0,1,2 [--train-fraction 0.2] --num-threads 1`, and the same with `--models Transformer` "
        "and its twin variant; table: `python benchmarks/rem_init.py`."
    )
    replace_section(HERE / "RESULTS.md", "rsa-twin", body, title="RSA versus its Transformer twin")
    print(markdown(table))
    print(markdown(twins))
    return table


if __name__ == "__main__":
    main()
