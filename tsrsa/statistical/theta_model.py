"""The Theta method of one series: statsmodels' ``ThetaModel`` and its state.

The fit is statsmodels' ``ThetaModel(y, period=m, deseasonalize=...).fit()``: where the series is
seasonal by its test (the autocorrelation at lag m, 10 %), it is divided by (or, for a series with a
value <= 0, reduced by) the seasonal indices of a classical decomposition; then b0 is the slope of a
least-squares line, and alpha the smoothing parameter of simple exponential smoothing (SES) from the
first value. The forecast ``h`` steps after observation T is

    (theta - 1) / theta * b0 * (h - 1 + 1/alpha - (1 - alpha)^T / alpha) + level_T

re-seasonalised with the index of its position in the season (statsmodels'
``ThetaModelResults.forecast``). The state is ``[level_T, T]``: the SES level and the steps it has
run; the parameters are ``[b0, alpha]`` and the m seasonal indices by position (1, or 0 for the
additive adjustment, where there is no season). New observations are adjusted by the index of their
position and smoothed with alpha fixed (:func:`run`).

A constant (seasonally adjusted) series has slope b0 = 0, and its forecast is the constant. statsmodels
(0.14, 0.15) finds a slope there: the least-squares step builds its regressors with ``add_trend(y,
"ct")``, which leaves the intercept out when the data it is given -- the series itself -- is a nonzero
constant, so the slope takes the intercept's place (42 everywhere gave b0 = 1.02, and forecasts that
climbed from 47 to 50). :func:`fit_theta` keeps statsmodels' other estimates and sets b0 = 0 there.

statsmodels is imported inside the functions that need it.
"""
from __future__ import annotations

import numpy as np

from tsrsa.statistical.series_fit import SeriesFit


def fit_theta(y: np.ndarray, m: int, deseasonalize: bool, theta: float) -> SeriesFit:
    """statsmodels' ThetaModel fitted to ``y`` with its SES state (module docstring)."""
    from statsmodels.tsa.forecasting.theta import ThetaModel

    seasonal = bool(deseasonalize and m > 1)
    model = ThetaModel(np.asarray(y, dtype=np.float64), period=m if seasonal else None, deseasonalize=seasonal)
    res = model.fit()
    b0, alpha = (float(v) for v in np.asarray(res.params))
    n = len(y)
    method = "mul" if seasonal and model.method.startswith("mul") else "add"
    indices = np.ones(m) if method == "mul" else np.zeros(m)
    if seasonal:  # the index of each position of the season, read off the forecast's components
        parts = res.forecast_components(m)
        indices[(n + np.arange(m)) % m] = np.asarray(parts["seasonal"], dtype=np.float64)
    form = {"kind": "theta", "m": int(m), "method": method, "theta": float(theta), "deseasonalize": seasonal}
    adjusted = adjust(form, np.r_[b0, alpha, indices], np.asarray(y, dtype=np.float64), 0)
    if np.ptp(adjusted) <= 1e-12 * np.abs(adjusted).max(initial=0.0):  # a constant: no slope (module docstring)
        b0 = 0.0
    params = np.r_[b0, alpha, indices]
    start = np.array([adjust(form, params, y[:1], 0)[0], 0.0])  # statsmodels' SES starts from the first value
    fit = SeriesFit(form, params, start, start, 0, np.nan)
    return replay(fit, np.asarray(y, dtype=np.float64))  # the level statsmodels' SES reaches (its "ses")


def adjust(form: dict, params: np.ndarray, y: np.ndarray, start: int) -> np.ndarray:
    """``y`` (steps ``start``... of the series) seasonally adjusted by the fitted indices."""
    index = params[2:][(start + np.arange(len(y))) % form["m"]]
    return y / index if form["method"] == "mul" else y - index


def levels(alpha: float, x: np.ndarray, level: float) -> np.ndarray:
    """(n,) SES levels after each value of ``x`` from ``level``: l_t = alpha x_t + (1 - alpha) l_(t-1)."""
    from scipy.signal import lfilter

    return lfilter([alpha], [1.0, alpha - 1.0], x, zi=[(1.0 - alpha) * level])[0]


def forecast_from(fit: SeriesFit, level: np.ndarray, steps: np.ndarray, position: np.ndarray, h: int) -> np.ndarray:
    """(n, h) forecasts from SES levels (n,) that ran ``steps`` (n,), the last observation at
    ``position - 1`` (n,) of the series."""
    b0, alpha, theta = fit.params[0], fit.params[1], fit.form["theta"]
    k = np.arange(1, h + 1, dtype=np.float64)[None, :] - 1  # (1, h)
    if alpha > 0:
        k = k + 1 / alpha - (1 - alpha) ** steps[:, None] / alpha  # (n, h)
    weight = (theta - 1) / theta if theta < 4.0 / np.finfo(np.double).eps else 1.0
    out = weight * b0 * k + level[:, None]  # (n, h)
    index = fit.params[2:][(position[:, None] + np.arange(h)[None, :]) % fit.form["m"]]  # (n, h)
    if not fit.form["deseasonalize"]:
        return out
    return out * index if fit.form["method"] == "mul" else out + index


# ---------------------------------------------------------------------- the family functions
def run(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    level = levels(fit.params[1], adjust(fit.form, fit.params, y, fit.nobs), fit.state[0])[-1]
    return fit.moved([level, fit.state[1] + len(y)], fit.nobs + len(y))


def replay(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    level = levels(fit.params[1], adjust(fit.form, fit.params, y, 0), fit.initial[0])[-1]
    return fit.moved([level, len(y)], len(y))


def restart(fit: SeriesFit, y: np.ndarray, start: int | None) -> SeriesFit:
    """SES from the first adjusted value (as statsmodels starts it); a seasonal adjustment needs ``start``."""
    if start is None and fit.form["deseasonalize"]:
        raise ValueError("a seasonally adjusted Theta model reads the position of each step in its season: "
                         "forecasting from a window needs the series' timestamps; use predict(df=...) or "
                         "cross_validate")
    start = 0 if start is None else start
    x = adjust(fit.form, fit.params, y, start)
    return fit.moved([levels(fit.params[1], x, x[0])[-1], len(y)], start + len(y))


def forecast(fit: SeriesFit, h: int) -> np.ndarray:
    return forecast_from(fit, fit.state[:1], fit.state[1:], np.array([fit.nobs]), h)[0]


def forecasts_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int) -> np.ndarray:
    cutoffs = np.asarray(cutoffs)
    level = levels(fit.params[1], adjust(fit.form, fit.params, y, 0), fit.initial[0])[cutoffs]
    return forecast_from(fit, level, cutoffs + 1.0, cutoffs + 1, h)


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
