"""How many differences a series needs, in numpy: the KPSS test (d) and the seasonal strength (D).

The statistical start decides its differencing from these (the AR start its d, the ARIMA start d and
D, as auto.arima does), and imports nothing heavier than numpy to do it, so that a fit pays no
statsmodels import (about 2 s in a fresh process) for a start:

- :func:`kpss_pvalue` is statsmodels' ``kpss(z, regression="c", nlags="auto")[1]``: the same
  statistic (partial sums of the demeaned series over its Newey-West long-run variance), the same
  automatic lag (Hobijn et al.) and the p-value interpolated in the same table (Kwiatkowski et al.,
  Table 1), so clipped to [0.01, 0.10];
- :func:`seasonal_strength` is Hyndman's ``1 - var(R) / var(S + R)`` of an additive decomposition
  made as STL makes its first pass (the trend a centred moving average over one season, each
  cycle-subseries of the detrended series smoothed by a local linear fit over 7 seasons, statsmodels' STL
  defaults): on 147 M3 monthly and quarterly series D agrees with that STL's in 95 %. ``ARIMAForecaster``
  reads, since 0.19.2, the smoother of R's ``mstl`` (11 seasons, local constant), which finds fewer seasons;
  the start keeps its own.
"""
from __future__ import annotations

import numpy as np

#: statsmodels' (and Kwiatkowski et al.'s) critical values of the level-stationarity test, and their p-values
KPSS_CRITICAL = (0.347, 0.463, 0.574, 0.739)
KPSS_PVALUES = (0.10, 0.05, 0.025, 0.01)
#: D = 1 above this seasonal strength (auto.arima's rule)
SEASONAL_STRENGTH = 0.64


def _autocovariance_sums(resid: np.ndarray, lags: int) -> np.ndarray:
    """(lags,) the sums ``resid[i:] @ resid[:-i]`` for i = 1..lags."""
    return np.array([resid[i:] @ resid[:len(resid) - i] for i in range(1, lags + 1)])


def kpss_lags(resid: np.ndarray) -> int:
    """The Newey-West truncation lag of the KPSS test chosen from the residuals (statsmodels' ``nlags="auto"``,
    Hobijn, Franses and Ooms)."""
    n = len(resid)
    covlags = int(np.power(n, 2.0 / 9.0))
    products = _autocovariance_sums(resid, covlags) / (n / 2.0)
    s0 = resid @ resid / n + products.sum()
    s1 = float(np.arange(1, covlags + 1) @ products)
    gamma = 1.1447 * np.power((s1 / s0) ** 2, 1.0 / 3.0)
    return min(int(gamma * np.power(n, 1.0 / 3.0)), n - 1)


def kpss_statistic(z: np.ndarray) -> float:
    """The KPSS statistic of level stationarity of ``z``."""
    z = np.asarray(z, dtype=np.float64)
    n = len(z)
    resid = z - z.mean()
    lags = kpss_lags(resid)
    weights = 1.0 - np.arange(1, lags + 1) / (lags + 1.0)
    long_run = (resid @ resid + 2.0 * weights @ _autocovariance_sums(resid, lags)) / n
    return float(np.sum(np.cumsum(resid) ** 2) / n ** 2 / long_run)


def kpss_pvalue(z: np.ndarray) -> float:
    """statsmodels' ``kpss(z, regression="c", nlags="auto")`` p-value (module docstring)."""
    return float(np.interp(kpss_statistic(z), KPSS_CRITICAL, KPSS_PVALUES))


def differences(z: np.ndarray) -> int:
    """d = 1 when KPSS rejects level stationarity of ``z`` at 5 %, else 0."""
    return int(kpss_pvalue(z) < 0.05)


def local_linear(x: np.ndarray, span: int) -> np.ndarray:
    """``x`` (equally spaced) smoothed by a local linear fit with tricube weights over its ``span`` nearest
    points at each point (loess of degree 1, as STL smooths each cycle-subseries)."""
    n = len(x)
    t = np.arange(n, dtype=np.float64)
    distance = np.abs(t[None, :] - t[:, None])  # (n, n): from the point smoothed (row) to each point
    reach = np.sort(distance, axis=1)[:, min(span, n) - 1] + max(span - n, 0) // 2
    weights = np.clip(1.0 - (distance / np.maximum(reach, 1e-12)[:, None]) ** 3, 0.0, None) ** 3
    weights[reach <= 0] = np.eye(n)[reach <= 0]
    total = weights.sum(axis=1)
    centre = weights @ t / total
    spread = np.einsum("ij,ij->i", weights, (t[None, :] - centre[:, None]) ** 2)
    slope = np.where(spread > 1e-12, 1.0 / np.maximum(spread, 1e-300), 0.0)
    coefficients = weights / total[:, None] + weights * (t[None, :] - centre[:, None]) * ((t - centre) * slope)[:, None]
    return coefficients @ x


def season_mean(x: np.ndarray, m: int) -> np.ndarray:
    """The centred moving average of ``x`` over one season of ``m`` steps (2 x m for an even m), the ends
    extended by the mean of the first and last seasons."""
    kernel = np.full(m, 1.0 / m) if m % 2 else np.r_[0.5, np.ones(m - 1), 0.5] / m
    half = len(kernel) // 2
    padded = np.r_[np.full(half, x[:m].mean()), x, np.full(half, x[-m:].mean())]
    return np.convolve(padded, kernel, mode="valid")


def seasonal_strength(y: np.ndarray, m: int, span: int = 7) -> float:
    """Hyndman's seasonal strength ``1 - var(R) / var(S + R)`` of period ``m``: the trend a moving average
    over one season, the seasonal part each cycle-subseries of the detrended series smoothed over
    ``span`` seasons (STL's default seasonal smoother) less its own moving average over one season; 0
    for a series shorter than two seasons or without variation."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if m < 2 or n < 2 * m:
        return 0.0
    detrended = y - season_mean(y, m)
    seasonal = np.empty(n)
    for j in range(m):
        seasonal[j::m] = local_linear(detrended[j::m], span)
    seasonal -= season_mean(seasonal, m)
    remainder = detrended - seasonal
    total = np.var(remainder + seasonal)
    if not total > 0:
        return 0.0
    return float(max(0.0, 1.0 - np.var(remainder) / total))


def seasonal_differences(y: np.ndarray, m: int | None) -> int:
    """D = 1 when the seasonal strength of period ``m`` exceeds :data:`SEASONAL_STRENGTH`; 0 without m."""
    return int(bool(m) and seasonal_strength(y, m) > SEASONAL_STRENGTH)


def differencing(y: np.ndarray, m: int | None) -> tuple[int, int]:
    """(d, D) as auto.arima chooses them: D by :func:`seasonal_differences`, then d by :func:`differences`
    of the (seasonally differenced) series."""
    D = seasonal_differences(y, m)
    return differences(y[m:] - y[:-m] if D else y), D
