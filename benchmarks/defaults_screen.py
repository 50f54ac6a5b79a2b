"""The defaults screen: each candidate set of model choices against the library's defaults, on
validation data, in the three regimes (long horizon, many series, short series).

    python benchmarks/defaults_screen.py              # reads the results files, writes its section
    python benchmarks/defaults_screen.py --no-write

Reads ``benchmarks/results/ltsf.csv``, ``m4.csv`` and ``short_series.csv`` (the runs are made by
``ltsf.py --variant``, ``m4.py --set`` and ``short_series.py --params``) and writes the section
"Choosing the defaults on validation" of RESULTS.md. How cells are paired and scored:
``tsrsa.benchmarking.defaults_screen``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.defaults_screen import (  # noqa: E402
    CHOICES, REGIMES, long_horizon_cells, many_series_cells, render, screen, short_series_cells,
)
from tsrsa.benchmarking.results import replace_section  # noqa: E402
from tsrsa.estimator.trainer import flat_params  # noqa: E402

RESULTS = HERE / "results"
MODELS = {"RSA": ("RSAForecaster", "RSA", "RSAForecaster"),
          "Transformer": ("TransformerForecaster", "Transformer", "TransformerForecaster"),
          "LSTM": ("LSTMForecaster", "LSTM", "LSTMForecaster"),
          "DLinear": ("DLinearForecaster", "DLinear", "DLinearForecaster")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    ltsf, m4, short = (pd.read_csv(RESULTS / f) for f in ("ltsf.csv", "m4.csv", "short_series.csv"))
    parts = ["What: each candidate set of model choices (" + ", ".join(f"`{c}`" for c in CHOICES) + ") as its "
             "validation error divided by the library's defaults' in the same cell, geometric mean over the "
             "cells where both ran: ETT at the protocol's input and budget, a run on a fraction of the training "
             "windows its own cell (validation MSE), M4 Hourly and Weekly at 10 epochs of 400 batches (validation "
             "OWA), the short-series benchmark (validation MSE). "
             "Below 1 is better than the defaults; the overall figure needs all three regimes. `start_weight` is "
             "applied after training, to the correction early stopping chose on these same validation windows: "
             "on them the network as trained (`start_weight=0.0`) is ahead by construction, and the short-series "
             "column cannot judge it; it was chosen on nested validation, windows no fit saw (\"Keeping a share of "
             "the network's correction\").\n"]
    for name, (lt, m, s) in MODELS.items():
        defaults = flat_params(getattr(tsrsa, lt)(h=1).get_params(), getattr(tsrsa, lt))  # options by their names
        reference = {k: defaults.get(k) for k in CHOICES}
        cells = dict(zip(REGIMES, (long_horizon_cells(ltsf, lt, defaults), many_series_cells(m4, m, defaults),
                                   short_series_cells(short, s, defaults))))
        if all(c.empty for c in cells.values()):
            continue
        parts += [f"**{name}**\n", render(screen(cells, reference), REGIMES)]
    parts.append(f"Command: `python benchmarks/defaults_screen.py`. Date: {dt.date.today().isoformat()} (the runs: "
                 f"their rows' dates). Rows: the three results files.")
    text = "\n".join(parts) + "\n"
    print(text)
    if not args.no_write:
        replace_section(HERE / "RESULTS.md", "defaults-screen", text, title="Choosing the defaults on validation")


if __name__ == "__main__":
    main()
