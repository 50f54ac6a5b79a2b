"""The standard long-horizon protocol (Time-Series-Library's), shared by ``benchmarks/`` and the CLI.

- :mod:`~tsrsa.benchmarking.protocol`: splits, training-row scaling, the frames a model fits;
- :mod:`~tsrsa.benchmarking.scoring`: batched MSE/MAE over every stride-1 test window;
- :mod:`~tsrsa.benchmarking.runner`: one (model, data set, horizon, seed) run -> one results row;
- :mod:`~tsrsa.benchmarking.results`: ``ltsf.csv`` rows and the RESULTS.md tables;
- :mod:`~tsrsa.benchmarking.configs`: the versioned model configurations;
- :mod:`~tsrsa.benchmarking.anchors`: published figures to compare with;
- :mod:`~tsrsa.benchmarking.ridge`: the closed-form protocol check;
- :mod:`~tsrsa.benchmarking.cli`: the command line.
"""
from tsrsa.benchmarking.protocol import (
    HORIZONS, LTSF_DATASETS, Borders, ProtocolData, borders, fit_frame, load_protocol_data, prepare,
)
from tsrsa.benchmarking.results import COLUMNS, append_rows, read_results
from tsrsa.benchmarking.scoring import Score, score_forecasts, score_model

__all__ = [
    "COLUMNS", "HORIZONS", "LTSF_DATASETS", "Borders", "ProtocolData", "Score", "append_rows", "borders",
    "fit_frame", "load_protocol_data", "prepare", "read_results", "score_forecasts", "score_model",
]
