"""ARIMA of one series: statsmodels' SARIMAX, its form and its state.

- The form (:class:`ArimaSpec`): orders, a constant (a mean, or a drift of a series differenced once) and
  optional Fourier regressors of a season above :data:`SHORT_SEASON`; how the orders are chosen is
  :mod:`tsrsa.statistical.arima_search` (auto.arima's tests and stepwise search).
- The fit: maximum likelihood on the differenced series (``simple_differencing=True``: the same
  parameters, a faster fit), the scale concentrated out.
- The state: the Kalman filter of the model on the undifferenced series (``simple_differencing=
  False``, statsmodels' default initialisation) with the fitted parameters, i.e. the predicted state
  mean and covariance after the last observation, saved as ``[a, P.ravel()]``. New observations
  continue the filter from it (:func:`run`: what statsmodels' ``append(refit=False)`` gives, in
  O(new steps)); forecasts filter ``h`` missing values from it; :func:`origin_forecasts` reads
  forecasts from many origins off one filter pass.
- The intervals (:func:`intervals`): statsmodels' ``conf_int`` of the model filtered from its state with
  the error variance, the concentrated scale of the filter over the series (the mean of v²/F after the
  first d + D·m steps, ``SeriesFit.sse / scored``), which new observations update as ``append`` does.

statsmodels is imported inside the functions that need it.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

from tsrsa.statistical.series_fit import SeriesFit

#: seasons up to this are seasonal ARIMA terms; longer ones are Fourier regressors
SHORT_SEASON = 24
FOURIER_K = (2, 4, 6)


@dataclass(frozen=True)
class ArimaSpec:
    """One SARIMAX form: orders, trend, and optional Fourier regressors."""

    order: tuple[int, int, int]
    seasonal_order: tuple[int, int, int, int] = (0, 0, 0, 0)
    trend: str = "n"
    fourier: tuple[int, int] | None = None  # (period, K): K sine/cosine pairs as regressors

    def exog(self, n: int, start: int = 0) -> np.ndarray | None:
        """(n, 2K) the Fourier regressors of steps start..start+n-1, or None without them."""
        if not self.fourier:
            return None
        period, K = self.fourier
        t = (start + np.arange(n))[:, None] * np.arange(1, K + 1)[None, :] * (2 * np.pi / period)  # (n, K)
        return np.concatenate([np.sin(t), np.cos(t)], axis=1)  # (n, 2K)

    def model(self, y: np.ndarray, *, simple_differencing: bool = False, start: int = 0,
              concentrate_scale: bool = True):
        """statsmodels' SARIMAX of this form on ``y`` (steps ``start``... of the series; the scale
        concentrated out, or the last parameter)."""
        from statsmodels.tsa.statespace.sarimax import SARIMAX

        return SARIMAX(y, exog=self.exog(len(y), start), order=self.order, seasonal_order=self.seasonal_order,
                       trend=self.trend, simple_differencing=simple_differencing, concentrate_scale=concentrate_scale)

    def fit(self, y: np.ndarray):
        """Maximum likelihood on ``y`` (on the differenced series: the same parameters, a faster fit); a form with
        nothing to estimate but the scale (a random walk, seasonal or not) is filtered for its likelihood."""
        with warnings.catch_warnings(action="ignore"):
            model = self.model(y, simple_differencing=True)
            if not model.k_params:  # statsmodels' optimiser refuses an empty parameter vector
                return model.filter(np.empty(0), cov_type="none")
            return model.fit(disp=False, cov_type="none")

    def forecasts(self, params, y_all: np.ndarray, origins, h: int) -> np.ndarray:
        """(len(origins), h) forecasts from ``origins`` of the model with ``params`` fixed,
        filtered over ``y_all``."""
        with warnings.catch_warnings(action="ignore"):
            return origin_forecasts(self.model(y_all).filter(np.asarray(params)), origins, h)

    @property
    def name(self) -> str:
        """ARIMA(1,1,1)(0,1,1)[12], with its Fourier pairs and constant."""
        p, d, q = self.order
        P, D, Q, m = self.seasonal_order
        out = f"ARIMA({p},{d},{q})" + (f"({P},{D},{Q})[{m}]" if m else "")
        if self.fourier:
            out += f" + {self.fourier[1]} Fourier pairs of period {self.fourier[0]}"
        if self.trend != "c":
            return out
        return out + (" with drift" if self.order[1] + self.seasonal_order[1] == 1 else " with constant")

    def describe(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> dict:
        return {"kind": "arima", "order": list(self.order), "seasonal_order": list(self.seasonal_order),
                "trend": self.trend, "fourier": list(self.fourier) if self.fourier else None}

    @classmethod
    def from_json(cls, form: dict) -> "ArimaSpec":
        order, seasonal, fourier = tuple(form["order"]), tuple(form["seasonal_order"]), form["fourier"]
        numbers = [*order, *seasonal, *(fourier or ())]
        if (len(order) != 3 or len(seasonal) != 4 or form["trend"] not in ("n", "c")
                or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in numbers)
                or (fourier is not None and len(fourier) != 2)):
            raise ValueError(f"{form!r} is not an ARIMA form")
        return cls(order, seasonal, form["trend"], tuple(fourier) if fourier else None)


def origin_forecasts(results, origins, h: int) -> np.ndarray:
    """Forecasts from many origins of a linear Gaussian state-space model filtered once.

    Parameters
    ----------
    results : statsmodels MLEResults
        The model filtered over the whole series (design and transition matrices constant in
        time; intercepts may vary: regressors).
    origins : array (n,) of int
        First target position of each forecast.
    h : int

    Returns
    -------
    numpy.ndarray
        (n, h): from origin t, E[y_{t..t+h-1} | y_{<t}], from the predicted state at t.
    """
    fr = results.filter_results
    origins = np.asarray(origins)
    for name in ("design", "transition"):
        matrix = getattr(fr, name)
        if not np.allclose(matrix, matrix[..., :1]):
            raise ValueError(f"origin_forecasts needs a constant {name} matrix")
    if origins.max() + h > fr.nobs:
        raise ValueError("the last origin's targets run past the filtered series")
    Z, T = fr.design[0, :, 0], fr.transition[:, :, 0]  # (k,), (k, k)
    d = np.broadcast_to(fr.obs_intercept[0], (fr.nobs,))  # (nobs,) regressors' part, or a constant
    c = np.broadcast_to(fr.state_intercept, (len(Z), fr.nobs))  # (k, nobs)
    a = fr.predicted_state[:, origins]  # (k, n) state at each origin given y_<t
    out = np.empty((len(origins), h))
    for j in range(h):
        out[:, j] = Z @ a + d[origins + j]
        a = T @ a + c[:, origins + j]
    return out


def named_params(res) -> dict:
    """``{parameter name: value}`` of a statsmodels fit, rounded to 6 decimals."""
    return {str(k): round(float(v), 6) for k, v in zip(res.model.param_names, np.asarray(res.params))}


# ---------------------------------------------------------------------- the family functions
def filtered(fit: SeriesFit, y: np.ndarray, start: int, state: np.ndarray | None = None, scale: float = 1.0):
    """The model of ``fit`` filtered over ``y`` (steps ``start``...) with its parameters, from ``state``
    (``[a, P.ravel()]``) or from statsmodels' initialisation.

    The filter runs with the scale fixed at 1, as statsmodels runs a model whose scale is concentrated
    out (the same gains and means), so that its covariances come out in those units as they are; a
    ``scale`` given (the error variance) multiplies the state's covariance and the errors' variance, so
    that the results' covariances and intervals are in the series' units."""
    mod = ArimaSpec.from_json(fit.form).model(y, start=start, concentrate_scale=False)
    if state is not None:
        from statsmodels.tsa.statespace.initialization import Initialization

        k = mod.k_states
        mod.ssm.initialization = Initialization(k, "known", constant=state[:k],
                                                stationary_cov=scale * state[k:].reshape(k, k))
    return mod.filter(np.append(fit.params, scale))


def scored_errors(res, burn: int) -> tuple[float, int]:
    """(sum of v²/F, count) of the one-step errors v of the filtered ``res`` (scale 1) after the first
    ``burn``: what statsmodels' concentrated scale divides (``scale = sum / count``; it leaves out the
    first d + D·m steps of a filter started from its initialisation, ``loglikelihood_burn``)."""
    fr = res.filter_results
    v, F = fr.forecasts_error[0, burn:], fr.forecasts_error_cov[0, 0, burn:]
    return float(np.sum(v * v / F)), len(v)


def moved_over(fit: SeriesFit, res, nobs: int, burn: int, sse: float = 0.0, scored: int = 0) -> SeriesFit:
    """``fit`` in the state after the filtered ``res`` (observation ``nobs``), its errors after ``burn``
    added to ``sse`` over ``scored`` earlier ones."""
    more, count = scored_errors(res, burn)
    return fit.moved(end_state(res), nobs).with_errors(sse + more, scored + count)


def end_state(res) -> np.ndarray:
    """``[a, P.ravel()]``: the predicted state mean and covariance after the last observation, the
    covariance in units of the concentrated scale, as the filter runs (statsmodels' results of a model
    with the scale concentrated out report it times the scale estimated on the data filtered, and
    ``extend`` starts from that, so it departs from ``append``)."""
    return np.concatenate([res.predicted_state[:, -1], res.predicted_state_cov[:, :, -1].ravel()])


def run(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    return moved_over(fit, filtered(fit, y, fit.nobs, fit.state), fit.nobs + len(y), 0, fit.sse, fit.scored)


def replay(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    res = filtered(fit, y, 0)
    return moved_over(fit, res, len(y), res.model.loglikelihood_burn)


def restart(fit: SeriesFit, y: np.ndarray, start: int | None) -> SeriesFit:
    """statsmodels' initialisation (it depends on the parameters alone); Fourier regressors need ``start``."""
    if start is None and fit.form["fourier"]:
        raise ValueError(f"{ArimaSpec.from_json(fit.form).name} reads the position of each step in its season: "
                         f"forecasting from a window needs the series' timestamps; use predict(df=...) or "
                         f"cross_validate")
    start = 0 if start is None else start
    res = filtered(fit, y, start)
    return moved_over(fit, res, start + len(y), res.model.loglikelihood_burn)


def forecast(fit: SeriesFit, h: int) -> np.ndarray:
    return filtered(fit, np.full(h, np.nan), fit.nobs, fit.state).filter_results.forecasts[0].copy()


def intervals(fit: SeriesFit, h: int, levels: tuple[float, ...]) -> np.ndarray:
    """(L, 2, h) lower and upper bounds of each level (a percentage) over the ``h`` steps after the last
    observation: statsmodels' ``get_prediction(...).conf_int(alpha)``, ``alpha = 1 - level/100``, of the model
    filtered from its state with the error variance ``fit.noise_variance`` (the concentrated scale of the
    filter over the series, as ``SARIMAX(y, ...).filter(params).get_forecast(h).conf_int(alpha)`` gives it)."""
    res = filtered(fit, np.full(h, np.nan), fit.nobs, fit.state, fit.noise_variance)
    prediction = res.get_prediction()
    return np.stack([np.asarray(prediction.conf_int(alpha=1.0 - level / 100.0)).T for level in levels])


def intervals_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int, levels: tuple[float, ...]) -> np.ndarray:
    """(W, L, 2, h) :func:`intervals` after positions ``cutoffs`` of ``y`` (the series from its fitted start,
    filtered once), each from the filter's predicted state there, with the fit's error variance."""
    fr = filtered(fit, y, 0).filter_results
    out = []
    for c in np.asarray(cutoffs) + 1:  # the state predicted for the step after each cutoff
        state = np.concatenate([fr.predicted_state[:, c], fr.predicted_state_cov[:, :, c].ravel()])
        out.append(intervals(fit.moved(state, int(c)), h, levels))
    return np.stack(out)


def forecasts_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int) -> np.ndarray:
    padded = np.concatenate([y, np.full(h, np.nan)])  # forecasts from the last position too
    return origin_forecasts(filtered(fit, padded, 0), np.asarray(cutoffs) + 1, h)


def first_bad(fit: SeriesFit, y: np.ndarray) -> int:
    return -1


def describe(fit: SeriesFit) -> tuple[str, dict]:
    return ArimaSpec.from_json(fit.form).name, dict(zip(fit.form["param_names"], fit.params.tolist()))


def check(fit: SeriesFit) -> None:
    ArimaSpec.from_json(fit.form)
    k = int(round((np.sqrt(1 + 4 * len(fit.state)) - 1) / 2))
    if (len(fit.params) != len(fit.form["param_names"]) or k < 1 or len(fit.state) != k + k * k
            or len(fit.initial) != 0):
        raise ValueError("the saved arrays of an ARIMA have the wrong sizes")
