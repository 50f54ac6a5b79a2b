"""Where windows sit in a learned cycle (``covariates={"cycle": ...}`` of a neural forecaster; the network's
part is :mod:`tsrsa.nn.cycle`, the period's choice :mod:`tsrsa.estimator.learned_cycle`): numpy and pandas only,
so that a served model computes them without torch.

The table has one row per series of the training frame, in its order; a fitted model's ``cycle_`` keeps the
period and those ids (:func:`fitted_cycle`), so that a forecast of a known series reads its row and a new series
the mean row (-1), wherever it appears (``predict(df=...)``, ``update`` with new series). A window's phase is its
first step's absolute step number (:meth:`tsrsa.data.frequency.Frequency.ordinals`) modulo the period: the same
timestamp has the same phase in every series and every call.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tsrsa.data.index_encoding import decode_index, encode_index
from tsrsa.data.memory import WindowCovariates
from tsrsa.data.windows import WindowSource


def fitted_cycle(period: int, ids: pd.Index) -> dict:
    """The ``cycle_`` of a fit: the period and the training frame's ids (the table's rows, in order)."""
    return {"period": int(period), "series": encode_index(ids)}


def rows_of(cycle: dict, ids: pd.Index) -> np.ndarray:
    """(n,) int64 the table row of each id (-1 for a series the network did not train on)."""
    return decode_index(cycle["series"]).get_indexer(ids).astype(np.int64)


def value_phases(panel, period: int) -> np.ndarray:
    """(N,) int64 the phase of every value of ``panel`` in a cycle of ``period`` steps."""
    first = panel.freq.ordinals(panel.first)  # (S,)
    within = np.arange(len(panel.values), dtype=np.int64) - np.repeat(panel.offsets[:-1], panel.lengths)
    return np.remainder(np.repeat(first, panel.lengths) + within, period)


def with_cycle(source: WindowSource | None, panel, cycle: dict) -> WindowSource:
    """A copy of ``source`` (or an empty one: no covariates) with the cycle's phases and rows for ``panel``'s
    windows."""
    if source is None:
        n, s = len(panel.values), panel.n_series
        source = WindowSource(np.zeros((n, 0), np.float32), 0, np.zeros((s, 0), np.float32), np.zeros((s, 0), np.int64))
    return dataclasses.replace(source, cycle_phase=value_phases(panel, cycle["period"]),
                               cycle_row=rows_of(cycle, panel.ids))


def window_inputs(covariates: WindowCovariates | None, cycle: dict | None, freq, ids: pd.Index, ends,
                  input_size: int) -> WindowCovariates | None:
    """The covariates of ``n`` windows (``covariates``, or empty ones without covariates) with their rows
    and phases in ``cycle`` (:func:`window_cycle`); ``covariates`` itself without a cycle."""
    if cycle is None:
        return covariates
    if covariates is None:
        n = len(ids)
        covariates = WindowCovariates(np.zeros((n, input_size, 0), np.float32), None, np.zeros((n, 0), np.float32),
                                      np.zeros((n, 0), np.int64))
    return dataclasses.replace(covariates, cycle=window_cycle(cycle, freq, ids, ends, input_size))


def window_cycle(cycle: dict, freq, ids: pd.Index, ends, input_size: int) -> np.ndarray:
    """(n, 2) int64 [table row, phase of the first input step] of windows of ``input_size`` steps whose last
    step is at the timestamps ``ends`` (n,) of the series ``ids`` (n,)."""
    first = freq.ordinals(ends) - (int(input_size) - 1)  # (n,)
    return np.stack([rows_of(cycle, ids), np.remainder(first, cycle["period"])], axis=1)
