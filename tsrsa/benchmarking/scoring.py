"""Batched scoring of every stride-1 test window: a few forward passes, never one per window.

The windows of each channel are strided views of its scaled column (no copies); they go to the
model in chunks, and only running sums of squared and absolute errors are kept. MSE and MAE are
averaged over every window, every horizon step and every channel, each window counted once (no
dropped last batch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from tsrsa.benchmarking.protocol import ProtocolData, fit_frame
from tsrsa.data.cycles import window_inputs

#: windows handed to the model per call (it runs them in its own bounded batches)
CHUNK = 8192


@dataclass
class Score:
    mse: float
    mae: float
    n_windows: int  # per channel
    n_values: int  # windows x horizon steps x channels


def window_views(data: ProtocolData, channel: int, h: int, lookback: int | None = None,
                 max_windows: int | None = None, part: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """Inputs (n, lookback) and targets (n, h) of the test (or validation) windows of one channel (views).

    Test window j has targets at rows [val_end + j, val_end + j + h) and inputs at the ``lookback``
    rows before them (``lookback`` defaults to the protocol's input length; a longer one, for a
    seasonal naive whose season exceeds it, reaches further back into the validation rows);
    ``part="val"``: the validation windows, targets from row ``train_end``.
    """
    if part not in ("test", "val"):
        raise ValueError(f"part={part!r}: choose 'test' or 'val'")
    b = data.borders
    lookback = b.input_size if lookback is None else int(lookback)
    n = b.n_windows(part, h)
    if n < 1:
        raise ValueError(f"h={h} leaves no {part} window in {data.name}")
    if max_windows is not None:
        n = min(n, int(max_windows))
    begin = b.val_end if part == "test" else b.train_end
    first = begin - lookback
    if first < 0:
        raise ValueError(f"a look-back of {lookback} rows reaches before the first row of {data.name}")
    column = data.scaled[first : begin + n - 1 + h, channel]  # (lookback + n - 1 + h,)
    windows = sliding_window_view(column, lookback + h)  # (n, lookback + h), a view
    return windows[:, :lookback], windows[:, lookback:]


def score_forecasts(forecast, data: ProtocolData, h: int, *, loc=None, scale=None,
                    lookback: int | None = None, max_windows: int | None = None,
                    chunk: int = CHUNK, part: str = "test", located: bool = False) -> Score:
    """MSE and MAE of ``forecast(tails, loc, scale, h) -> (n, h)`` over every test (``part="val"``:
    validation) window.

    Parameters
    ----------
    forecast : callable
        Forecasts from input windows ``tails`` (n, lookback) whose series have scaling
        statistics ``loc``, ``scale`` (n,), as a forecaster's ``forecast_windows`` (its
        ``"yhat"``).
    data : ProtocolData
    h : int
    loc, scale : array (C,), optional
        Statistics of each channel passed along with its windows (default 0 and 1).
    lookback : int, optional
        Input values per window (default: the protocol's input length).
    max_windows : int, optional
        Score only the first windows of each channel (smoke runs).
    chunk : int
        Windows per call of ``forecast``.
    located : bool
        Call ``forecast(tails, loc, scale, h, channel, rows)`` with the channel's number and the rows (m,)
        of the windows' last inputs (a model that reads where a window sits, as a learned cycle does).
    """
    C = len(data.channels)
    loc = np.zeros(C) if loc is None else np.asarray(loc, dtype=np.float64)
    scale = np.ones(C) if scale is None else np.asarray(scale, dtype=np.float64)
    sq = ab = 0.0
    count = n_windows = 0
    for c in range(C):
        inputs, targets = window_views(data, c, h, lookback, max_windows, part)  # (n, T), (n, h)
        n_windows = len(inputs)
        begin = (data.borders.val_end if part == "test" else data.borders.train_end) - 1  # window 0's last input
        for start in range(0, n_windows, chunk):
            x, y = inputs[start : start + chunk], targets[start : start + chunk]
            m = len(x)
            where = (c, begin + start + np.arange(m)) if located else ()
            yhat = np.asarray(forecast(x, np.full(m, loc[c]), np.full(m, scale[c]), h, *where), dtype=np.float64)
            if yhat.shape != y.shape:
                raise ValueError(f"forecasts of shape {yhat.shape} for targets of shape {y.shape}")
            err = yhat - y  # (m, h)
            sq += float(np.square(err).sum())
            ab += float(np.abs(err).sum())
            count += err.size
    return Score(mse=sq / count, mae=ab / count, n_windows=n_windows, n_values=count)


def score_model(model, data: ProtocolData, h: int, *, max_windows: int | None = None,
                chunk: int = CHUNK, part: str = "test") -> Score:
    """Score a forecaster fitted on ``data``'s channels (each channel one of its series) on the test
    windows (``part="val"``: the validation windows, in the units of the test's, whatever loss the
    model trained with)."""
    memory = model.memory_
    where = memory.ids.get_indexer(data.channels)  # (C,) position of each channel in the fit
    if (where < 0).any():
        missing = [c for c, i in zip(data.channels, where) if i < 0]
        raise ValueError(f"the model was not fitted on channels {missing}")
    lookback = max(data.input_size, memory.tails.shape[1])
    cycle = model.learned_cycle()

    def forecast(tails, loc, scale, horizon, channel=None, rows=None):
        inputs = None
        if cycle is not None:  # each window's row and phase in the cycle (the frames' time is the row number)
            ids = pd.Index([data.channels[channel]] * len(rows))
            inputs = window_inputs(None, cycle, model.freq_, ids, rows, model.resolved_input_size)
        return model.forecast_windows(tails, loc, scale, horizon, inputs)["yhat"]

    return score_forecasts(forecast, data, h, loc=memory.loc[where], scale=memory.scale[where],
                           lookback=lookback, max_windows=max_windows, chunk=chunk, part=part,
                           located=cycle is not None)


def score_streamed(model, data: ProtocolData, h: int, *, max_windows: int | None = None) -> Score:
    """Score a forecaster in the streaming configuration as ``update()`` serves it: each channel
    streams from its first row, and test window j is forecast from the state after the row before
    its targets (the whole history, not a window of ``input_size`` rows)."""
    from tsrsa.data.validation import build_panel

    b = data.borders
    n = b.n_windows("test", h) if max_windows is None else min(b.n_windows("test", h), int(max_windows))
    panel = build_panel(fit_frame(data, 0, b.val_end + n - 1), model.frame_spec, freq=model.freq)
    if list(panel.ids) != list(model.memory_.ids):
        raise ValueError("score_streamed needs the model fitted on the data set's channels, in their order")
    cutoffs = np.tile(b.val_end - 1 + np.arange(n), (panel.n_series, 1))  # (C, n) last row before each window
    yhat = model.forecast_cutoffs(panel, cutoffs, h)["yhat"].reshape(n, panel.n_series, h)  # (n, C, h)
    rows = b.val_end + np.arange(n)[:, None] + np.arange(h)[None, :]  # (n, h)
    order = [data.channels.index(str(c)) for c in panel.ids]
    y = data.scaled[rows][:, :, order].transpose(0, 2, 1)  # (n, C, h)
    err = yhat - y
    return Score(mse=float(np.square(err).mean()), mae=float(np.abs(err).mean()), n_windows=n, n_values=err.size)
