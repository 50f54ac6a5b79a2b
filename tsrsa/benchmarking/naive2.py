"""The M4 competition's Naive2 and the seasonality test it rests on.

Naive2 is the naive forecast of the seasonally adjusted series, re-seasonalised (Makridakis et al.
2020, IJF, and the competition's benchmark code, github.com/Mcompetitions/M4-methods). A series
is seasonal at period m when its lag-m autocorrelation passes a 90% test,

    |r_m| > 1.645 sqrt((1 + 2 sum_{k<m} r_k^2) / n),   n >= 3m,

and its seasonal indices are then those of a classical multiplicative decomposition (R's
``decompose``). The same adjustment serves the competition's Theta, SES, Holt and Damped
benchmarks (:mod:`tsrsa.benchmarking.m4_references`).
"""
from __future__ import annotations

import numpy as np


def acf(y, nlags: int) -> np.ndarray:
    """Autocorrelations r_1..r_nlags as R's ``acf`` computes them (mean removed, denominator n).

    Parameters
    ----------
    y : array (n,)
    nlags : int

    Returns
    -------
    numpy.ndarray
        (nlags,) the autocorrelations at lags 1..nlags.
    """
    x = np.asarray(y, dtype=np.float64) - np.mean(y)
    denom = np.dot(x, x)
    return np.array([np.dot(x[: len(x) - k], x[k:]) / denom for k in range(1, nlags + 1)])


def is_seasonal(y, m: int) -> bool:
    """M4's 90% test: |r_m| above 1.645 / sqrt(n) * sqrt(1 + 2 sum_{k<m} r_k^2).

    Parameters
    ----------
    y : array (n,)
    m : int
        The season in steps; a season of 1, or fewer than 3 seasons of data, is never seasonal.

    Returns
    -------
    bool
    """
    n = len(y)
    if m <= 1 or n < 3 * m:
        return False
    r = acf(y, m)
    limit = 1.645 / np.sqrt(n) * np.sqrt(1.0 + 2.0 * np.sum(r[: m - 1] ** 2))
    return bool(abs(r[m - 1]) > limit)


def seasonal_indices(y, m: int) -> np.ndarray:
    """Multiplicative seasonal indices of R's ``decompose``.

    Parameters
    ----------
    y : array (n,)
    m : int

    Returns
    -------
    numpy.ndarray
        (m,) index j belongs to the positions t with t mod m == j (t counted from the series'
        start); the indices average to 1.
    """
    y = np.asarray(y, dtype=np.float64)
    weights = np.r_[0.5, np.ones(m - 1), 0.5] / m if m % 2 == 0 else np.ones(m) / m
    half = len(weights) // 2
    trend = np.full(len(y), np.nan)
    trend[half: len(y) - half] = np.convolve(y, weights, mode="valid")  # centred moving average
    ratio = y / trend
    figure = np.array([np.nanmean(ratio[j::m]) for j in range(m)])
    return figure / figure.mean()


def deseasonalise(y, m: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The seasonally adjusted history and the seasonal indices of the ``h`` steps after it.

    Parameters
    ----------
    y : array (n,)
    m : int
    h : int

    Returns
    -------
    adjusted : numpy.ndarray
        (n,) ``y`` divided by its seasonal indices; ``y`` itself when :func:`is_seasonal` says no.
    future_index : numpy.ndarray
        (h,) the indices that re-seasonalise a forecast of the adjusted series (ones when not
        seasonal).
    """
    n = len(y)
    if not is_seasonal(y, m):
        return np.asarray(y, dtype=np.float64), np.ones(h)
    figure = seasonal_indices(y, m)
    return y / figure[np.arange(n) % m], figure[np.arange(n, n + h) % m]


def naive2(y, m: int, h: int) -> np.ndarray:
    """The competition's Naive2: the last seasonally adjusted value, re-seasonalised.

    Parameters
    ----------
    y : array (n,)
        One series' history.
    m : int
        Its season (1: no season).
    h : int
        The horizon.

    Returns
    -------
    numpy.ndarray
        (h,) the forecast.
    """
    adjusted, future_index = deseasonalise(y, m, h)
    return adjusted[-1] * future_index
