"""AutoForecaster's rules ranked over the M3 and M4 regimes on the later block, from the two studies' rows.

    python benchmarks/auto_rules.py
    python benchmarks/auto_rules.py --without DLinear
    python benchmarks/auto_rules.py --median

It fits nothing. Eight regimes, each scored on its later block (a block after the one the rules chose on, never
a test value): M3's four subsets from ``auto_m3_study.py``'s rows with every candidate that has rows there (the
networks included), each whole (``--monthly-first N``: the monthly subset on the first N series of its draw only,
``--monthly-arima R``: with ARIMA's rows of release R), each candidate's latest rows; M4 Weekly and Hourly from
``auto_m4_study.py``'s rows, each with the networks at the look-back AutoForecaster chooses on integer time (its
default or twice it, ``--longer``) and at the protocol's (52, 168).
In each regime every rule's later-block MASE and sMAPE are divided by the best single candidate's there; the
ranking is the geometric mean of those ratios over the regimes and the worst of them, lowest geometric mean
first. ``--without`` leaves candidates out of every regime (what the rules would choose among without them);
``--median`` combines what each rule keeps by the median at each step instead of AutoForecaster's mean.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

import auto_m3_data as m3
import auto_m4_study as m4
from auto_m3_rules import RULES, latest_rows, rule_table

#: M4's regimes: (label, frequency, the labelled candidates that stand in for the defaults, the networks' rows at
#: twice their default look-back, kept where they validate better: ``auto_m4_study.look_back_choice``).
AT_PROTOCOL = " (networks at the protocol's look-back)"
NETS = ("RSA", "Transformer", "DLinear")
M4_REGIMES = (("M4 Weekly", "Weekly", (), tuple(f"{n}[input_size=52]" for n in NETS)),
              ("M4 Weekly" + AT_PROTOCOL, "Weekly", tuple(f"{n}[input_size=52]" for n in NETS), ()),
              ("M4 Hourly", "Hourly", (), tuple(f"{n}[input_size=192]" for n in NETS)),
              ("M4 Hourly" + AT_PROTOCOL, "Hourly", tuple(f"{n}[input_size=168]" for n in NETS), ()))


def m3_ratios(rows: pd.DataFrame, data: Path, subset: str, first: int | None = None, use: dict | None = None,
              without=(), median: bool = False) -> pd.DataFrame:
    """Each rule's later-block MASE and sMAPE over the best candidate's on one M3 subset (two windows, as
    AutoForecaster's default)."""
    rows = rows[(rows["subset"] == subset) & ~rows["model"].isin(without)]
    table = rule_table(latest_rows(rows, first, use), data, median)
    table = table[table["origin"] == "later"]
    single = table[table["model"].isin([*m3.CANDIDATES, *m3.NETWORKS]) & (table["n_windows"] == 1)]
    rules = table[table["model"].isin(RULES) & (table["n_windows"] == 2)].set_index("model")
    return pd.DataFrame({"mase": rules["mase"] / single["mase"].min(), "smape": rules["smape"] / single["smape"].min()})


def m4_ratios(frequency: str, use=(), output: Path = m4.OUTPUT, data_dir=None, without=(), longer=(),
              median: bool = False) -> pd.DataFrame:
    """The same on M4 ``frequency`` (seed 0), ``use``: labelled networks in place of the defaults; ``longer``: as
    ``auto_m4_study.py --summary --longer``."""
    table = m4.rule_scores(frequency, 0, output, data_dir, use, without, longer, median)
    single = table[~table["model"].isin(RULES)]
    rules = table[table["model"].isin(RULES)].set_index("model")
    return pd.DataFrame({"mase": rules["later_mase"] / single["later_mase"].min(),
                         "smape": rules["later_smape"] / single["later_smape"].min()})


def ranking(ratios: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """{regime: ratios (rule -> mase, smape)} -> per rule the geometric mean and the worst of each ratio over the
    regimes, lowest geometric mean of MASE first."""
    out = {}
    for metric in ("mase", "smape"):
        wide = pd.DataFrame({regime: frame[metric] for regime, frame in ratios.items()})
        out[f"{metric}_gmean"] = np.exp(np.log(wide).mean(axis=1))
        out[f"{metric}_worst"] = wide.max(axis=1)
    return pd.DataFrame(out).sort_values("mase_gmean", kind="stable")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--m3-output", type=Path, default=m3.OUTPUT)
    parser.add_argument("--m4-output", type=Path, default=m4.OUTPUT)
    parser.add_argument("--data-dir", help="the folder holding m3/ and m4/ (default: ../shared/datasets)")
    parser.add_argument("--monthly-first", type=int, help="the first N monthly series of the draw only")
    parser.add_argument("--monthly-arima", help="the release of ARIMA's monthly rows (default: its latest)")
    parser.add_argument("--without", default="", help="comma-separated candidates left out of every regime")
    parser.add_argument("--median", action="store_true",
                        help="combine each rule's kept candidates by their median at each step, not their mean")
    args = parser.parse_args(argv)
    data = Path(args.data_dir) if args.data_dir else m3.HERE.parent.parent / "shared" / "datasets"
    without = [name for name in args.without.split(",") if name]
    rows = pd.read_csv(args.m3_output, dtype={"unique_id": str}, keep_default_na=False)
    monthly = (args.monthly_first, {"ARIMA": args.monthly_arima} if args.monthly_arima else None)
    ratios = {f"M3 {subset}": m3_ratios(rows, data / "m3", subset, *(monthly if subset == "monthly" else (None, None)),
                                        without=without, median=args.median)
              for subset in ("monthly", "quarterly", "yearly", "other")}
    for label, frequency, use, longer in M4_REGIMES:
        ratios[label] = m4_ratios(frequency, use, args.m4_output, data, without, longer, args.median)
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print("later-block MASE over the best single candidate:")
        print(pd.DataFrame({regime: frame["mase"] for regime, frame in ratios.items()}).round(3).to_string())
        print("\nover the regimes:")
        print(ranking(ratios).round(4).to_string())


if __name__ == "__main__":
    main()
