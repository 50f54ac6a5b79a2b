"""The protocol check: a closed-form, channel-independent ridge forecast (no training loop).

Ridge regression (penalty 10) from the ``L`` mean-centred input values of a window to its ``h``
targets centred by the same input mean, one map shared by all channels:

    W = (X'X + 10 I)^-1 X'Y,   yhat = (x - mean(x)) W + mean(x)

fitted on the training windows of every channel (every ``step``-th one). Its test scores, taken
by the same batched scorer as every model, land within about 0.01 of the published RLinear
figures, so a harness far from them has a protocol bug (BENCHMARKS.md).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tsrsa.benchmarking.protocol import ProtocolData
from tsrsa.benchmarking.scoring import Score, score_forecasts

PENALTY = 10.0


def fit_ridge(data: ProtocolData, h: int, *, penalty: float = PENALTY, step: int = 1,
              chunk: int = 16384) -> np.ndarray:
    """The shared map W (L, h) from the training windows of every channel."""
    L = data.input_size
    A = np.zeros((L, L))  # X'X
    B = np.zeros((L, h))  # X'Y
    for c in range(len(data.channels)):
        column = data.scaled[: data.borders.train_end, c]
        windows = sliding_window_view(column, L + h)[::step]  # (n, L + h), a view
        for start in range(0, len(windows), chunk):
            w = windows[start : start + chunk]
            mean = w[:, :L].mean(axis=1, keepdims=True)  # (m, 1)
            X, Y = w[:, :L] - mean, w[:, L:] - mean  # (m, L), (m, h)
            A += X.T @ X
            B += X.T @ Y
    return np.linalg.solve(A + penalty * np.eye(L), B)


def ridge_forecast(W: np.ndarray):
    """``forecast(tails, loc, scale, h)`` of the fitted map, for :func:`score_forecasts`."""

    def forecast(tails, loc, scale, h):
        x = tails[:, -W.shape[0]:]  # (n, L)
        mean = x.mean(axis=1, keepdims=True)  # (n, 1)
        return ((x - mean) @ W + mean)[:, :h]  # (n, h)

    return forecast


def ridge_check(data: ProtocolData, h: int, *, step: int = 1, max_windows: int | None = None) -> Score:
    """Test MSE/MAE of the closed-form ridge forecast on ``data`` at horizon ``h``."""
    W = fit_ridge(data, h, step=step)
    return score_forecasts(ridge_forecast(W), data, h, max_windows=max_windows)
