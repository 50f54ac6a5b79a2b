"""Benchmark suites as a library, shared by ``benchmarks/`` and the CLI.

The standard long-horizon protocol (Time-Series-Library's):

- :mod:`~tsrsa.benchmarking.protocol`: splits, training-row scaling, the frames a model fits;
- :mod:`~tsrsa.benchmarking.scoring`: batched MSE/MAE over every stride-1 test window;
- :mod:`~tsrsa.benchmarking.runner`: one (model, data set, horizon, seed) run -> one results row;
- :mod:`~tsrsa.benchmarking.results`: ``ltsf.csv`` rows and the RESULTS.md tables;
- :mod:`~tsrsa.benchmarking.configs`: the versioned model configurations;
- :mod:`~tsrsa.benchmarking.anchors`: published figures to compare with;
- :mod:`~tsrsa.benchmarking.ridge`: the closed-form protocol check;
- :mod:`~tsrsa.benchmarking.cli`: the command line.

Many short series, the M4 competition's Hourly and Weekly sets:

- :mod:`~tsrsa.benchmarking.m4`: the files, the validation and test splits, sMAPE, MASE and OWA;
- :mod:`~tsrsa.benchmarking.naive2`: Naive2 and the seasonality test it rests on;
- :mod:`~tsrsa.benchmarking.m4_references`: the statistical references, fitted per series;
- :mod:`~tsrsa.benchmarking.m4_global`: one global tsrsa model over every series of a frequency.

Error against training length on short series:

- :mod:`~tsrsa.benchmarking.short_series`: the split rule, cells, scoring, the runs of a forecaster
  and of an anchor;
- :mod:`~tsrsa.benchmarking.simulated`: ARMA processes with known roots;
- :mod:`~tsrsa.benchmarking.classic`: the classic series (airline passengers, CO2, ...);
- :mod:`~tsrsa.benchmarking.statistical_anchors`: ARIMA and ETS fitted once, filtered forward.

:mod:`~tsrsa.benchmarking.folders` finds the data folder that holds ``m4/`` and ``classic/``.
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
