"""The Theta method of one series as the M3 competition ran it, and its state.

The method (Assimakopoulos and Nikolopoulos 2000; the M3 competition's Theta, Makridakis and Hibon
2000), as :func:`fit_theta` fits it:

1. Seasonality test (:func:`seasonality_test`), where m > 1: the series is seasonal when its
   autocorrelation at lag m passes the 90 % one-sided test, |r_m| > 1.645·sqrt((1 + 2·Σ_{k<m} r_k²)/n)
   (the sum over lags 1 to m - 1; R's ``forecast::thetaf`` and the M4 competition's benchmark code).
2. Classical decomposition (:func:`classical_indices`) of a seasonal series: a centred moving average
   of m steps (2×m for an even m) as the trend, the ratios y / trend averaged by position in the
   season, normalised to mean 1; the series is divided by them (multiplicative, as in M3). A series
   with a value <= 0 takes the additive decomposition instead (differences, normalised to mean 0).
3. The theta lines of the adjusted series X: the theta = 0 line, the least-squares line
   L_t = a0 + b0·t, extrapolated; the theta = 2 line, Z_t = 2·X_t − L_t (``theta·X − (theta − 1)·L``
   for another theta), extrapolated by simple exponential smoothing (SES) from its first value, alpha
   of least squared one-step errors on Z (:func:`ses_alpha`); the two combined with weights
   (theta − 1)/theta and 1/theta (1/2 and 1/2), then re-seasonalised.

The combination equals SES of X itself with the same alpha (from X's first value) plus a drift
(Hyndman and Billah 2003): the forecast ``h`` steps after observation T is

    (theta - 1) / theta * b0 * (h - 1 + 1/alpha - (1 - alpha)^T / alpha) + level_T

re-seasonalised with the index of its position in the season (the form of statsmodels'
``ThetaModelResults.forecast``). The state is ``[level_T, T]``: X's SES level and the steps it has run;
the parameters are ``[b0, alpha]`` and the m seasonal indices by position (1, or 0 for the additive
adjustment, where there is no season). New observations are adjusted by the index of their position
and smoothed with alpha fixed (:func:`run`).

What differs from statsmodels' ``ThetaModel`` (0.15), which this module used before: its seasonality
test counts sum_{k<m} r_k² once (``n·r_m² / Σ_{k=0}^{m-1} r_k² > 1.645²``), not twice, so it finds a
season in more series; its SES alpha is fitted to X, not to the theta = 2 line. Its decomposition
(``seasonal_decompose``) is the classical one above.

Prediction intervals (:func:`intervals`) are those of R's ``forecast::thetaf``: the method is SES with a drift,
whose h-step error variance on the adjusted series is that of SES, ``sigma² · (1 + alpha² · (h - 1))``
(ETS(A,N,N); Hyndman and Billah 2003), about the adjusted forecast, then re-seasonalised as the forecast is;
``sigma²`` is the mean squared one-step error of the method on the adjusted series (:func:`run_over`),
carried on over new observations (``run``) and measured again on a series forecast anew (``replay``, ``restart``:
``predict(df=...)``), as ETS's is. (statsmodels' ``ThetaModelResults.prediction_intervals`` multiplies ``h - 1``
by ``1 + (alpha - 1)²`` instead, and reads sigma² from an ARIMA(0,1,1) fitted apart.)

A constant (seasonally adjusted) series has slope b0 = 0, and its forecast is the constant.
"""
from __future__ import annotations

import numpy as np

from tsrsa.statistical.series_fit import SeriesFit

#: the one-sided 90 % normal quantile of M3's seasonality test
SEASONALITY_Z = 1.645
#: the grid of alpha that :func:`ses_alpha` searches before refining the best point
ALPHA_GRID = np.linspace(0.01, 0.99, 99)


def autocorrelations(y: np.ndarray, lags: int) -> np.ndarray:
    """(lags,) r_1 ... r_lags: sum_t (y_t - mean)(y_(t+k) - mean) / sum_t (y_t - mean)^2 (R's ``acf``,
    statsmodels' ``acf``)."""
    d = np.asarray(y, dtype=np.float64) - np.mean(y)
    denominator = d @ d
    return np.array([d[:len(d) - k] @ d[k:] / denominator for k in range(1, lags + 1)])


def seasonality_test(y: np.ndarray, m: int) -> bool:
    """M3's test (module docstring): |r_m| > 1.645·sqrt((1 + 2·sum_{k=1}^{m-1} r_k²) / n); False for m < 2,
    a constant series, or one of fewer than 2·m values."""
    y = np.asarray(y, dtype=np.float64)
    if m < 2 or len(y) < 2 * m or np.ptp(y) == 0:
        return False
    r = autocorrelations(y, m)
    return bool(abs(r[-1]) > SEASONALITY_Z * np.sqrt((1.0 + 2.0 * np.sum(r[:-1] ** 2)) / len(y)))


def centred_moving_average(y: np.ndarray, m: int) -> np.ndarray:
    """(n,) the centred moving average of m steps (2×m, weights 1/2m at both ends, for an even m), NaN
    where the window leaves the series."""
    weights = np.r_[0.5, np.ones(m - 1), 0.5] / m if m % 2 == 0 else np.ones(m) / m
    half = len(weights) // 2
    out = np.full(len(y), np.nan)
    out[half:len(y) - half] = np.convolve(y, weights, mode="valid")
    return out


def classical_indices(y: np.ndarray, m: int, method: str) -> np.ndarray:
    """(m,) the seasonal index of each position (position 0 = the first value) of the classical
    decomposition: y / trend ("mul") or y - trend ("add") averaged by position over the steps the
    centred moving average covers, normalised to mean 1 ("mul") or 0 ("add")."""
    y = np.asarray(y, dtype=np.float64)
    trend = centred_moving_average(y, m)
    detrended = y / trend if method == "mul" else y - trend
    position = np.arange(len(y)) % m
    index = np.array([np.nanmean(detrended[position == j]) for j in range(m)])
    return index / index.mean() if method == "mul" else index - index.mean()


def ses_errors(alpha: float, z: np.ndarray) -> np.ndarray:
    """(n - 1,) the one-step errors of SES on ``z`` started from its first value."""
    level = levels(alpha, z, z[0])  # (n,) the level after each value
    return z[1:] - level[:-1]


def ses_alpha(z: np.ndarray) -> float:
    """The alpha in (0, 1) of least squared one-step SES errors on ``z`` (from its first value): the best
    of :data:`ALPHA_GRID`, refined by bounded Brent search between its neighbours."""
    from scipy.optimize import minimize_scalar

    z = np.asarray(z, dtype=np.float64)
    sse = lambda a: float(np.sum(ses_errors(a, z) ** 2))  # noqa: E731
    values = [sse(a) for a in ALPHA_GRID]
    best = int(np.argmin(values))
    low, high = (ALPHA_GRID[best - 1] if best else 1e-6), (ALPHA_GRID[best + 1] if best + 1 < len(ALPHA_GRID)
                                                             else 1.0 - 1e-6)
    found = minimize_scalar(sse, bounds=(low, high), method="bounded", options={"xatol": 1e-10})
    return float(found.x) if found.fun <= values[best] else float(ALPHA_GRID[best])


def fit_theta(y: np.ndarray, m: int, deseasonalize: bool, theta: float) -> SeriesFit:
    """The M3 Theta method fitted to ``y`` with its SES state (module docstring)."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    seasonal = bool(deseasonalize and seasonality_test(y, m))
    method = "mul" if y.min() > 0 else "add"
    indices = np.ones(m) if method == "mul" else np.zeros(m)
    if seasonal:
        indices = classical_indices(y, m, method)
        if method == "mul" and indices.min() <= 0:  # cannot happen for positive values; kept as a guard
            method, indices = "add", classical_indices(y, m, "add")
    form = {"kind": "theta", "m": int(m), "method": method, "theta": float(theta), "deseasonalize": seasonal}
    x = adjust(form, np.r_[0.0, 0.0, indices], y, 0)  # the seasonally adjusted series
    t = np.arange(n, dtype=np.float64)
    if np.ptp(x) <= 1e-12 * np.abs(x).max(initial=0.0):  # a constant: no slope
        a0, b0 = float(np.mean(x)), 0.0
    else:
        a0, b0 = (float(v) for v in np.linalg.lstsq(np.column_stack([np.ones(n), t]), x, rcond=None)[0])
    line = a0 + b0 * t  # the theta = 0 line
    alpha = ses_alpha(theta * x - (theta - 1.0) * line)  # SES on the theta line
    params = np.r_[b0, alpha, indices]
    start = np.array([x[0], 0.0])  # SES from the first (adjusted) value
    return replay(SeriesFit(form, params, start, start, 0, np.nan), y)


def drift(fit: SeriesFit, steps: np.ndarray) -> np.ndarray:
    """(n,) the drift of the one-step forecast from SES levels that ran ``steps`` (n,) values:
    (theta - 1)/theta · b0 · (1/alpha - (1 - alpha)^steps / alpha) (module docstring, h = 1)."""
    return adjusted_from(fit, np.zeros(len(steps)), np.asarray(steps, dtype=np.float64), 1)[:, 0]


def run_over(fit: SeriesFit, x: np.ndarray, state: np.ndarray) -> tuple[float, np.ndarray]:
    """(the SES level after the adjusted values ``x``, the method's one-step errors on them) from ``state`` ([SES
    level, the values it ran]): each value against the forecast made before it. From the fitted start (the first
    value, 0 values run) the first value is the start itself and scores nothing: n - 1 errors."""
    after = levels(fit.params[1], x, state[0])  # (n,) the level after each value
    errors = x - np.r_[state[0], after[:-1]] - drift(fit, state[1] + np.arange(len(x)))
    return float(after[-1]), errors[1:] if state[1] == 0 else errors


def adjust(form: dict, params: np.ndarray, y: np.ndarray, start: int) -> np.ndarray:
    """``y`` (steps ``start``... of the series) seasonally adjusted by the fitted indices."""
    index = params[2:][(start + np.arange(len(y))) % form["m"]]
    return y / index if form["method"] == "mul" else y - index


def levels(alpha: float, x: np.ndarray, level: float) -> np.ndarray:
    """(n,) SES levels after each value of ``x`` from ``level``: l_t = alpha x_t + (1 - alpha) l_(t-1)."""
    from scipy.signal import lfilter

    return lfilter([alpha], [1.0, alpha - 1.0], x, zi=[(1.0 - alpha) * level])[0]


def adjusted_from(fit: SeriesFit, level: np.ndarray, steps: np.ndarray, h: int) -> np.ndarray:
    """(n, h) forecasts of the adjusted series from SES levels (n,) that ran ``steps`` (n,) values."""
    b0, alpha, theta = fit.params[0], fit.params[1], fit.form["theta"]
    k = np.arange(1, h + 1, dtype=np.float64)[None, :] - 1  # (1, h)
    if alpha > 0:
        k = k + 1 / alpha - (1 - alpha) ** steps[:, None] / alpha  # (n, h)
    weight = (theta - 1) / theta if theta < 4.0 / np.finfo(np.double).eps else 1.0
    return weight * b0 * k + level[:, None]  # (n, h)


def reseasonalised(fit: SeriesFit, out: np.ndarray, position: np.ndarray) -> np.ndarray:
    """(..., n, h) adjusted values ``out`` of the steps after observation ``position - 1`` (n,) in the series' own
    units: times (or plus) each step's seasonal index."""
    if not fit.form["deseasonalize"]:
        return out
    index = fit.params[2:][(position[:, None] + np.arange(out.shape[-1])[None, :]) % fit.form["m"]]  # (n, h)
    return out * index if fit.form["method"] == "mul" else out + index


def forecast_from(fit: SeriesFit, level: np.ndarray, steps: np.ndarray, position: np.ndarray, h: int) -> np.ndarray:
    """(n, h) forecasts from SES levels (n,) that ran ``steps`` (n,), the last observation at
    ``position - 1`` (n,) of the series."""
    return reseasonalised(fit, adjusted_from(fit, level, steps, h), position)


def intervals_from(fit: SeriesFit, level: np.ndarray, steps: np.ndarray, position: np.ndarray, h: int,
                   levels_: tuple[float, ...]) -> np.ndarray:
    """(n, L, 2, h) lower and upper bounds of each level (a percentage) of the forecasts from SES levels (n,)
    (:func:`forecast_from`'s arguments): the adjusted forecast ± z · sigma · sqrt(1 + alpha² (k - 1)) at step k,
    re-seasonalised (module docstring)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + np.asarray(levels_, dtype=np.float64) / 200.0)  # (L,)
    spread = np.sqrt(fit.noise_variance * (1.0 + fit.params[1] ** 2 * np.arange(h)))  # (h,)
    point = adjusted_from(fit, level, steps, h)[:, None, None, :]  # (n, 1, 1, h)
    bounds = point + np.array([-1.0, 1.0])[None, None, :, None] * (z[:, None, None] * spread)[None]  # (n, L, 2, h)
    return reseasonalised(fit, bounds.transpose(1, 2, 0, 3), position).transpose(2, 0, 1, 3)


# ---------------------------------------------------------------------- the family functions
def run(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    moved = measured(fit, adjust(fit.form, fit.params, y, fit.nobs), fit.state, fit.nobs + len(y))
    if not np.isfinite(fit.noise_variance):  # saved before the errors were kept: its intervals refuse
        return moved.with_errors(np.nan, 0)
    return moved.with_errors(fit.sse + moved.sse, fit.scored + moved.scored)


def measured(fit: SeriesFit, x: np.ndarray, state: np.ndarray, nobs: int) -> SeriesFit:
    """``fit`` run over the adjusted values ``x`` from ``state`` (observation ``nobs`` the last), its one-step
    errors measured over them alone."""
    level, errors = run_over(fit, x, state)
    return fit.moved([level, state[1] + len(x)], nobs).with_errors(float(errors @ errors), len(errors))


def replay(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    return measured(fit, adjust(fit.form, fit.params, y, 0), fit.initial, len(y))


def restart(fit: SeriesFit, y: np.ndarray, start: int | None) -> SeriesFit:
    """SES from the first adjusted value (as statsmodels starts it); a seasonal adjustment needs ``start``."""
    if start is None and fit.form["deseasonalize"]:
        raise ValueError("a seasonally adjusted Theta model reads the position of each step in its season: "
                         "forecasting from a window needs the series' timestamps; use predict(df=...) or "
                         "cross_validate")
    start = 0 if start is None else start
    x = adjust(fit.form, fit.params, y, start)
    return measured(fit, x, np.array([x[0], 0.0]), start + len(y))


def forecast(fit: SeriesFit, h: int) -> np.ndarray:
    return forecast_from(fit, fit.state[:1], fit.state[1:], np.array([fit.nobs]), h)[0]


def forecasts_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int) -> np.ndarray:
    cutoffs = np.asarray(cutoffs)
    level = levels(fit.params[1], adjust(fit.form, fit.params, y, 0), fit.initial[0])[cutoffs]
    return forecast_from(fit, level, cutoffs + 1.0, cutoffs + 1, h)


def intervals(fit: SeriesFit, h: int, levels_: tuple[float, ...]) -> np.ndarray:
    """(L, 2, h) the bounds of each level over the ``h`` steps after the last observation
    (:func:`intervals_from`)."""
    return intervals_from(fit, fit.state[:1], fit.state[1:], np.array([fit.nobs]), h, levels_)[0]


def intervals_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int,
                 levels_: tuple[float, ...]) -> np.ndarray:
    """(W, L, 2, h) :func:`intervals` after positions ``cutoffs`` of ``y`` (the series from its fitted start), with
    the fit's error variance."""
    cutoffs = np.asarray(cutoffs)
    level = levels(fit.params[1], adjust(fit.form, fit.params, y, 0), fit.initial[0])[cutoffs]
    return intervals_from(fit, level, cutoffs + 1.0, cutoffs + 1, h, levels_)


def first_bad(fit: SeriesFit, y: np.ndarray) -> int:
    return -1


def describe(fit: SeriesFit) -> tuple[str, dict]:
    m = fit.form["m"]
    name = f"Theta(theta={fit.form['theta']:g}" + (f", {fit.form['method']} season [{m}])"
                                                   if fit.form["deseasonalize"] else ")")
    values = {"b0": float(fit.params[0]), "alpha": float(fit.params[1])}
    if fit.form["deseasonalize"]:
        values.update({f"seasonal.{i}": float(v) for i, v in enumerate(fit.params[2:])})
    return name, values


def check(fit: SeriesFit) -> None:
    form = fit.form
    m, theta = form["m"], form["theta"]
    if (isinstance(m, bool) or not isinstance(m, int) or m < 1 or form["method"] not in ("add", "mul")
            or not isinstance(theta, float) or theta < 1 or not isinstance(form["deseasonalize"], bool)
            or fit.params.shape != (2 + m,) or fit.initial.shape != (2,) or fit.state.shape != (2,)):
        raise ValueError(f"{form!r} with its arrays is not a Theta model")
