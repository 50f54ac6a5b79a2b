"""The learned cycle and the chosen look-back on the long-horizon protocol: one table from results/ltsf.csv.

    python benchmarks/ltsf.py --dataset ETTh1 --models DLinear --variant "covariates={'cycle': 'auto'}"
    python benchmarks/ltsf.py --dataset ETTh1 --models DLinear --variant input_size=auto
    python benchmarks/long_horizon_options.py            # the RESULTS.md section from the rows

Per (data set, model): each variant's test and validation MSE averaged over the horizons 96-720 at the
seeds where it and the default both have every horizon (the default's line: the seeds of any option), its
ratio to the default's on those seeds, and for ``input_size=auto`` the look-back chosen at each horizon (from the rows'
``params``). A pair is shown once the default and at least one option have all four horizons at a seed.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "ltsf.csv"
#: the options compared, as the configurations name their variants
VARIANTS = ("default", "covariates={'cycle': 'auto'}", "input_size=auto",
            "covariates={'cycle': 'auto'},input_size=auto")
HORIZONS = (96, 192, 336, 720)


def comparison(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per (data set, model, variant) as the module docstring says."""
    rows = rows[rows["variant"].isin(VARIANTS) & rows["horizon"].isin(HORIZONS) & (rows["input_size"] == 96)]
    rows = rows[rows["train_fraction"] == 1.0]
    order = dict.fromkeys(zip(rows["dataset"], rows["model"]))  # in the order of their first runs: a rerun moves none
    rows = rows.drop_duplicates(["dataset", "model", "variant", "horizon", "seed"], keep="last")
    groups = dict(list(rows.groupby(["dataset", "model"], sort=False)))
    out = []
    for dataset, model in order:
        group = groups[(dataset, model)]
        complete = {v: {s for s, g in part.groupby("seed") if set(g["horizon"]) == set(HORIZONS)}
                    for v, part in group.groupby("variant")}
        if "default" not in complete:
            continue
        paired = {v: complete["default"] & seeds for v, seeds in complete.items() if v != "default"}
        paired["default"] = set().union(*paired.values()) if paired else set()
        for variant in VARIANTS:
            seeds = sorted(paired.get(variant, set()))
            if not seeds:
                continue
            part = group[(group["variant"] == variant) & group["seed"].isin(seeds)]
            base = group[(group["variant"] == "default") & group["seed"].isin(seeds)]
            chosen = ""
            if "input_size=auto" in variant:
                by_h = part.groupby("horizon")["params"].agg(
                    lambda ps: "/".join(str(json.loads(p).get("input_size_chosen")) for p in ps))
                chosen = ", ".join(f"{h}: {by_h[h]}" for h in HORIZONS if h in by_h)
            out.append({"dataset": dataset, "model": model.replace("Forecaster", ""), "variant": variant,
                        "seeds": ",".join(map(str, seeds)), "test_mse": part["mse"].mean(),
                        "vs_default": part["mse"].mean() / base["mse"].mean(), "val_mse": part["val_mse"].mean(),
                        "val_vs_default": part["val_mse"].mean() / base["val_mse"].mean(),
                        "fit_s": part["train_seconds"].mean(), "look_back": chosen})
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame) -> str:
    lines = ["| set | model | variant | seeds | test MSE (H96-720) | over default | validation MSE | over default | "
             "fit s per horizon | look-back chosen (H: L) |", "|---" * 10 + "|"]
    for r in table.itertuples():
        lines.append(f"| {r.dataset} | {r.model} | {r.variant} | {r.seeds} | {r.test_mse:.3f} | {r.vs_default:.3f} | "
                     f"{r.val_mse:.3f} | {r.val_vs_default:.3f} | {r.fit_s:.0f} | {r.look_back} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=CSV)
    parser.add_argument("--print", action="store_true", help="print the table instead of writing RESULTS.md")
    args = parser.parse_args(argv)
    table = markdown(comparison(pd.read_csv(args.results)))
    if args.print:
        print(table)
        return
    from tsrsa.benchmarking.results import replace_section

    replace_section(HERE / "RESULTS.md", "long-horizon-options", table,
                    title="Long horizons: the learned cycle and the chosen look-back")


if __name__ == "__main__":
    main()
