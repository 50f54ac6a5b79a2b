"""The statistical start of a neural forecaster: a fitted model's forecast as a linear map of the window.

``start="ar"``, ``"ets"``, ``"arima"`` or ``"auto"`` fits a statistical model on the training parts of the
series, in the units the network reads (each series scaled by its training part's statistics), and writes its
point forecast from a window of the latest ``L`` values as ``S(x) = W x + b`` (W: h x L). The network
(:mod:`tsrsa.nn.start`) adds its own output, started at zero, so that before the first optimiser
step the forecast is the statistical model's.

- **"ar"**: an autoregression with a constant, on the levels or, when KPSS rejects level stationarity
  in most series, on the first differences (a drift then being the constant), fitted by ordinary
  least squares (statsmodels' ``OLS``) on the lagged values of every series pooled; the order by AIC
  over 0..p_max on a common sample, then refitted on all the rows of that order, as statsmodels'
  ``ar_select_order`` and ``AutoReg`` do (an explosive fit, with a root outside the unit circle, gives
  way to the order of next lowest AIC). The h-step forecast of such a model is an affine function
  of its last p (+ 1) values, so the map is exact: for one series it is ``AutoReg``'s forecast.
- **"ets"**: exponential smoothing with additive errors (the six forms of ``ETSForecaster``: no,
  additive or damped trend; an additive season of the frequency's period when the window holds
  one), fitted by statsmodels' ``ETSModel`` on each of at most :data:`ETS_SERIES` series (evenly
  spread over the panel), each fit's map averaged. With additive errors the state after the window
  is linear in the window and the state before it; the state before it is estimated from the window
  itself as the one of least squared one-step errors over the window (:func:`window_start`, linear
  in the window), so the map is linear. Its error against the fit's forecast from the whole history
  is ``w' F^(k-1) D^L (s - s_hat)``, the initial-state error discounted over the window (D = F - g w');
  ``truncation`` in the record is its mean absolute size on the fitted series' last windows, in the
  scaled units.

- **"arima"**: a seasonal ARIMA with automatic orders per series, as an ARMA of the levels in
  innovations form, its state before the window estimated as ETS's is
  (:mod:`tsrsa.forecasters.start_arima`).
- **"auto"**: the candidates, each fitted as above on the training parts; kept: the one whose forecasts
  of the validation windows (those whose targets lie in the held-out steps, on at most
  :data:`AUTO_SERIES` series) have the lowest mean squared error (without held-out steps, of each
  training part's last window). The candidates are "ar" and "ets", and "arima" too on a short series
  (the forecaster passes :data:`SHORT_AUTO_MODELS` for one series at the automatic budget on fewer than
  2,000 training windows, where its other rules for short series apply). The record
  says which and why (``chosen_by``, and ``ar_mse``, ``ets_mse``, ``arima_mse`` of those fitted).

A panel gets one map for every series (pooled coefficients), so a global model, a new series and a
window given to ``predict(df=...)`` all read it the same way. The streaming configuration has no
window and takes no start.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tsrsa.forecasters.arima_model import differences
from tsrsa.forecasters.ets_model import EtsForm, candidate_forms, fit_lowest_aic, forecast
from tsrsa.forecasters.start_arima import arima_start
from tsrsa.forecasters.start_maps import (  # noqa: F401 (forget_kept_fits: the kept fits are emptied here too)
    StartMap, affine_map, forget_kept_fits, innovations_map, innovations_start, kept_fit, spread,
)
from tsrsa.init.ar import companion_roots, default_max_lag
from tsrsa.init.heads import Estimates

#: the models a start can be fitted from; "auto" fits several and keeps the one of lowest validation error
START_MODELS = ("ar", "ets", "arima", "auto")
#: what "auto" chooses among by default; a short series adds "arima" (:data:`SHORT_AUTO_MODELS`)
AUTO_MODELS = ("ar", "ets")
#: what "auto" chooses among for one series at the automatic budget on fewer than
#: :data:`~tsrsa.forecasters.ensembles.AUTO_WINDOWS` training windows, where an ARIMA search costs little against
#: the networks (docs/statistical_start.md)
SHORT_AUTO_MODELS = ("ar", "ets", "arima")
#: "auto" scores its candidates on the windows of at most this many series (evenly spread over the panel)
AUTO_SERIES = 256
#: an ETS start fits at most this many series (ETS is fitted one series at a time)
ETS_SERIES = 16
#: series checked for a unit root when an AR start chooses its differencing
KPSS_SERIES = 64


# ---------------------------------------------------------------------- AR
def ar_forecasts(windows: np.ndarray, coefficients: np.ndarray, constant: float, d: int, h: int) -> np.ndarray:
    """(n, h) forecasts of an AR(p) with a constant on the d-th differences (d in {0, 1}) from
    windows (n, L): the recursion run forward with the forecasts in place of the future values."""
    p = len(coefficients)
    z = np.diff(windows, axis=1) if d else windows
    history = z[:, z.shape[1] - p:] if p else z[:, :0]
    out = np.empty((len(windows), h))
    for k in range(h):
        step = constant + history[:, ::-1] @ coefficients if p else np.full(len(windows), constant)
        out[:, k] = step
        history = np.concatenate([history[:, 1:], step[:, None]], axis=1) if p else history
    return windows[:, -1:] + np.cumsum(out, axis=1) if d else out


def lag_rows(series: list[np.ndarray], p: int, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Pooled regression rows: targets z_t and lags [z_(t-1), ..., z_(t-p)] for t >= first of each series."""
    targets, lags = [], []
    for z in series:
        if len(z) <= first:
            continue
        t = np.arange(first, len(z))
        targets.append(z[t])
        lags.append(z[t[:, None] - np.arange(1, p + 1)[None, :]] if p else np.empty((len(t), 0)))
    return np.concatenate(targets), np.vstack(lags)


def aic_by_order(target: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """AIC of the least-squares AR fits of orders 0..p on the same rows (a constant and the first p lag
    columns), from one cross-product matrix: statsmodels ``OLS(...).fit().aic`` of each, without p
    regressions over every row."""
    X = np.column_stack([np.ones(len(target)), lags])
    gram, cross, n = X.T @ X, X.T @ target, len(target)
    scores = []
    for p in range(X.shape[1]):
        k = p + 1
        coef = np.linalg.lstsq(gram[:k, :k], cross[:k], rcond=None)[0]
        rss = max(float(target @ target - coef @ cross[:k]), 1e-300)
        scores.append(n * (np.log(2 * np.pi * rss / n) + 1) + 2 * k)
    return np.asarray(scores)


def fit_ar(series: list[np.ndarray], window: int, season: int, order: int | None = None,
           d: int | None = None) -> tuple[np.ndarray, float, int, float]:
    """(coefficients, constant, d, aic) of the pooled AR fit (module docstring); ``order`` and ``d``
    fix what is otherwise chosen."""
    import statsmodels.api as sm

    if d is None:
        varied = [y for y in series if len(y) >= 12 and np.ptp(y) > 0]  # KPSS has no answer for a constant
        votes = [differences(varied[i]) for i in spread(len(varied), KPSS_SERIES)] if varied else []
        d = int(2 * sum(votes) > len(votes)) if votes else 0
    z = [np.diff(y) if d else y for y in series]
    shortest = min(len(v) for v in z)
    ceiling = max(default_max_lag(shortest), season + 1 if 1 < season < shortest // 2 else 0)
    p_max = max(0, min(window - d, ceiling, shortest - 2))
    if order is not None and order > window - d:
        raise ValueError(f"an AR start of order {order} on {'differences' if d else 'levels'} needs a window "
                         f"of at least {order + d} steps; input_size is {window}")
    candidates = [order] if order is not None else np.argsort(aic_by_order(*lag_rows(z, p_max, p_max)),
                                                              kind="stable").tolist()
    for p in candidates:  # by AIC; an explosive fit (a root outside the unit circle) gives way to the next
        target, lags = lag_rows(z, p, p)
        fit = sm.OLS(target, np.column_stack([np.ones(len(target)), lags])).fit()
        coefficients = np.asarray(fit.params[1:], dtype=np.float64)
        if order is not None or p == 0 or np.abs(companion_roots(coefficients)).max() <= 1.0 + 1e-9:
            with np.errstate(divide="ignore"):  # a perfect fit (a constant series): log(0) in its likelihood
                aic = float(fit.aic)
            return coefficients, float(fit.params[0]), d, aic
    raise AssertionError("order 0 is always stable")


def ar_start(series: list[np.ndarray], window: int, h: int, season: int, order=None, d=None) -> StartMap:
    coefficients, constant, d, aic = fit_ar(series, window, season, order, d)
    weight, bias = affine_map(lambda w: ar_forecasts(w, coefficients, constant, d, h), window)
    record = {"model": "ar", "order": len(coefficients), "d": d, "constant": round(constant, 8),
              "coefficients": [round(float(a), 8) for a in coefficients],
              "aic": round(aic, 4) if np.isfinite(aic) else None, "series": len(series)}
    return StartMap(weight, bias, record)


# ---------------------------------------------------------------------- ETS
def ets_matrices(form: EtsForm, params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F, g, w) of an additive-error, additive-season ETS form with parameters ``params`` (statsmodels'
    order: alpha, [beta], [gamma], [phi]): state ``[level, trend, seasonal oldest first]``, one-step
    forecast ``w' x``, next state ``F x + g (y - w' x)``."""
    m = form.m if form.seasonal else 0
    names = form.param_names
    value = dict(zip(names, params))
    alpha, beta = value["smoothing_level"], value.get("smoothing_trend", 0.0)
    gamma, phi = value.get("smoothing_seasonal", 0.0), value.get("damping_trend", 1.0 if form.trend else 0.0)
    k = 2 + m
    F = np.zeros((k, k))
    F[0, 0], F[0, 1], F[1, 1] = 1.0, phi, phi
    w = np.zeros(k)
    w[0], w[1] = 1.0, phi
    g = np.zeros(k)
    g[0], g[1] = alpha, beta
    if m:
        F[2 + np.arange(m - 1), 3 + np.arange(m - 1)] = 1.0  # the seasons move one place older
        F[k - 1, 2] = 1.0  # the oldest, updated, becomes the newest
        w[2], g[k - 1] = 1.0, gamma
    return F, g, w


def window_start(form: EtsForm, params: np.ndarray, window: int) -> np.ndarray:
    """(2 + m, window): the state before a window as a linear function of the window
    (:func:`~tsrsa.forecasters.start_maps.innovations_start` of the form's matrices)."""
    return innovations_start(*ets_matrices(form, params), window)


def ets_map(form: EtsForm, params: np.ndarray, window: int, h: int) -> np.ndarray:
    """(h, window): the ETS form's forecast from a window, started at :func:`window_start`."""
    F, g, w = ets_matrices(form, params)
    k = np.arange(1, h + 1)
    phi = dict(zip(form.param_names, params)).get("damping_trend", 1.0)
    H = np.zeros((h, len(g)))
    H[:, 0] = 1.0
    if form.trend:
        H[:, 1] = np.cumsum(phi ** k) if form.damped else k
    if form.seasonal:
        H[np.arange(h), 2 + (k - 1) % form.m] = 1.0
    return innovations_map(F, g, w, H, window)


def ets_start(series: list[np.ndarray], window: int, h: int, season: int) -> StartMap:
    seasonal = "auto" if 1 < season <= window and all(len(y) >= 2 * season + 2 for y in series) else None
    forms = candidate_forms("add", "auto", "auto", seasonal, season if seasonal else 1)
    maps, errors, names, alphas, gammas = [], [], [], [], []
    varied = [i for i in range(len(series)) if np.ptp(series[i]) > 0]  # ETS has no likelihood on a constant
    if not varied:
        raise ValueError('start="ets" fits exponential smoothing, and every series is constant over its training '
                         'part; use start="ar" or start=None')
    for i in np.asarray(varied)[spread(len(varied), ETS_SERIES)]:
        y = series[i]
        fit = kept_ets_fit(y, forms)
        form = EtsForm.from_json(fit.form)
        weights = ets_map(form, fit.params, window, h)
        maps.append(weights)
        names.append(form.name)
        value = dict(zip(form.param_names, fit.params))
        alphas.append(value["smoothing_level"])
        if form.seasonal:
            gammas.append(value["smoothing_seasonal"])
        if len(y) >= window:
            errors.append(float(np.mean(np.abs(forecast(fit, h) - weights @ y[-window:]))))
    weight = np.mean(maps, axis=0)
    record = {"model": "ets", "forms": sorted(set(names)), "series": len(maps),
              "truncation": round(float(np.mean(errors)), 6) if errors else None,
              "smoothing_level": round(float(np.median(alphas)), 6),
              "smoothing_seasonal": round(float(np.median(gammas)), 6) if gammas else None,
              "season": season if gammas else None}
    return StartMap(weight, np.zeros(h), record)


def kept_ets_fit(y: np.ndarray, forms: list[EtsForm]):
    """``fit_lowest_aic(y, forms)``, taken from the kept fits (:func:`~tsrsa.forecasters.start_maps.kept_fit`)
    when the same values were fitted with the same forms."""
    def fit(values):
        with warnings.catch_warnings(action="ignore"):
            return fit_lowest_aic(values, forms)

    return kept_fit("ets", y, json.dumps([f.to_json() for f in forms], sort_keys=True), fit)


def start_estimates(record: dict, estimates: Estimates) -> Estimates:
    """The REM heads' estimates (:class:`tsrsa.init.heads.Estimates`, per time step) from a fitted start's
    ``record``: an AR start's characteristic roots (a first difference adds a unit root, which the heads
    clip), an ARIMA start's (of its AR polynomial times its differences: unit roots, and a seasonal
    difference's roots of unity on the season's cycles), or an ETS start's level discount 1 - alpha as a
    real root and its season, decaying by 1 - gamma from one season to the next; the pooled
    autocorrelation of ``estimates`` is kept."""
    if record["model"] in ("ar", "arima"):
        roots = companion_roots(record["coefficients"])  # an ARIMA's: its differences' unit roots among them
        if record.get("d"):
            roots = np.concatenate([[1.0 + 0j], roots])
        return replace(estimates, roots=roots[np.argsort(-np.abs(roots), kind="stable")],
                       notes=[*estimates.notes, "roots from the AR start"])
    roots = np.array([1.0 - record["smoothing_level"]], dtype=np.complex128)
    periods, decay = ([record["season"]], [1.0 - record["smoothing_seasonal"]]) if record.get("season") else ([], [])
    return replace(estimates, roots=roots, periods=periods, period_acf=decay,
                   notes=[*estimates.notes, "roots and season from the ETS start"])


def fit_start(model: str, series: list[np.ndarray], window: int, h: int, season: int,
              held_out: list[np.ndarray] | None = None, candidates: tuple[str, ...] = AUTO_MODELS) -> StartMap:
    """The start ``model`` ("ar", "ets", "arima" or "auto") fitted on the scaled training parts ``series``;
    "auto" chooses among ``candidates`` on ``held_out``, each series' steps after its training part
    (:func:`auto_start`)."""
    if model == "auto":
        return auto_start(series, window, h, season, held_out, candidates)
    return FITTERS[model](series, window, h, season)


def scoring_windows(series: list[np.ndarray], held_out: list[np.ndarray] | None, window: int,
                    h: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(inputs (n, window), targets (n, h), what they are) of the windows "auto" scores on: every window
    whose h targets lie in a series' held-out steps (its validation windows), on at most
    :data:`AUTO_SERIES` series; without held-out steps, the last window of each training part (in-sample)."""
    spans = []
    with_held_out = held_out is not None and any(len(v) >= h for v in held_out)
    for i in spread(len(series), AUTO_SERIES):
        y = np.concatenate([series[i], held_out[i]]) if with_held_out else series[i]
        first = max(len(series[i]) if with_held_out else len(y) - h, window)  # the first window's first target
        if len(y) - first >= h:
            spans.append(sliding_window_view(y[first - window:], window + h))  # (n, window + h)
    if not spans:
        return np.empty((0, window)), np.empty((0, h)), "none"
    spans = np.concatenate(spans)
    return spans[:, :window], spans[:, window:], "validation" if with_held_out else "training"


def auto_start(series: list[np.ndarray], window: int, h: int, season: int,
               held_out: list[np.ndarray] | None, candidates: tuple[str, ...] = AUTO_MODELS) -> StartMap:
    """The ``candidates`` fitted on the training parts; kept: the one whose forecasts of the validation
    windows (:func:`scoring_windows`) have the lowest mean squared error, before the network sees them.
    The AR start when no other model has a fit (every series constant) or no window can be scored."""
    fitted = {"ar": ar_start(series, window, h, season)}
    for name in candidates:
        if name not in fitted:
            try:
                fitted[name] = FITTERS[name](series, window, h, season)
            except (ValueError, RuntimeError):  # every series constant, or no form of the grid fits
                continue
    ar = fitted["ar"]
    if len(fitted) == 1:
        return replace(ar, record={**ar.record, "chosen_by": "no other model has a fit on these series"})
    inputs, targets, where = scoring_windows(series, held_out, window, h)
    if not len(inputs):
        return replace(ar, record={**ar.record, "chosen_by": "no window to score"})
    errors = {name: float(np.mean((start(inputs) - targets) ** 2)) for name, start in fitted.items()}
    chosen = fitted[min(errors, key=errors.get)]  # the first listed of equal errors
    scores = {f"{name}_mse": round(value, 8) for name, value in errors.items()}
    return replace(chosen, record={**chosen.record, "chosen_by": f"mean squared error on {len(inputs)} {where} "
                                                                 f"windows", **scores})


FITTERS = {"ar": ar_start, "ets": ets_start, "arima": arima_start}
