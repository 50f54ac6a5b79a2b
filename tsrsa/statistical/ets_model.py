"""ETS exponential smoothing of one series: statsmodels' ``ETSModel``, its forms, its state.

A form is (error, trend, damped, seasonal, m): error "add" or "mul", trend None or "add" (damped or
not), seasonal None, "add" or "mul" with a season of m steps. The fit is statsmodels'
``ETSModel(...).fit()``: maximum likelihood of the smoothing parameters with the initial states
(``initialization_method="estimated"``), or of the smoothing parameters alone, the initial states
set by statsmodels' heuristic (``"heuristic"``: faster; by default for a season above
:data:`SHORT_SEASON` steps, so that dozens of seasonal states stay out of the optimiser, as the
benchmarks' anchors do). Among several forms the one of lowest AICc (statsmodels' ``aicc``: the
forecaster's search, as R's ``ets`` and statsforecast's ``AutoETS`` choose) or of lowest AIC (``aic``:
:func:`fit_lowest_aic`) is kept (:func:`fit_best`). Each form is fitted by statsmodels' own
optimiser, once; only the chosen one is smoothed into a results object (``fit(return_params=True)``
and ``loglike`` for the others: the same parameters and likelihood, without the results each fit
would build), and a form with no degrees of freedom left for AICc (n <= parameters + 2) is not fitted.

The search of :func:`candidate_forms` at ``error="auto"`` and ``seasonal="auto"`` is R's
``ets(restrict=TRUE)`` and ``AutoETS``'s: additive or multiplicative error, no / additive / damped
trend, no / additive season, and the multiplicative season with the multiplicative error only (no
additive error with a multiplicative season, no multiplicative trend); the forecaster leaves the
multiplicative forms out for a series with a value <= 0.

The state after observation t is ``[level, trend, s_(t-m+1), ..., s_t]`` (trend 0 without one, no
seasonal part without a season): the seasonal states oldest first, so the forecast k steps ahead
reads ``s[(k - 1) % m]``. Running the model over observations (:func:`run`, :func:`replay`,
:func:`restart`) is ``ETSModel(y, ..., initialization_method="known", initial_level=...,
initial_trend=..., initial_seasonal=...).smooth(params)``: statsmodels' own recursions with the
parameters fixed. The point forecast from a state is the closed form ETS forecast (the same for
additive and multiplicative errors): ``(level + phi_k * trend)`` plus or times ``s[(k - 1) % m]``,
with ``phi_k = phi + ... + phi^k`` (k without damping), for any number of steps.

The prediction intervals (:func:`intervals`) are statsmodels' own for the model in its state: the
closed form of the additive forms, simulated paths of a fixed seed for the others, both scaled by the
fit's ``mse`` (the mean squared one-step error; relative errors for a multiplicative error), which the
runs over new observations carry on (``SeriesFit.sse``, ``scored``).

statsmodels is imported inside the functions that need it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsrsa.statistical.series_fit import SeriesFit

#: seasons up to this many steps have their initial states estimated; longer ones use the heuristic
SHORT_SEASON = 24
#: statsmodels' names of the smoothing parameters, in their order
SMOOTHING = ("smoothing_level", "smoothing_trend", "smoothing_seasonal", "damping_trend")
#: statsmodels' start values of the smoothing parameters: where its fit of a constant series stays, and
#: what :func:`constant_fit` gives one
START = {"smoothing_level": 0.1, "smoothing_trend": 0.01, "smoothing_seasonal": 0.01, "damping_trend": 0.98}


@dataclass(frozen=True)
class EtsForm:
    """One ETS form (module docstring)."""

    error: str  # "add" or "mul"
    trend: str | None  # None or "add"
    damped: bool
    seasonal: str | None  # None, "add" or "mul"
    m: int = 1  # season length in steps (1 without a season)
    initialization: str = "estimated"  # of the fit: "estimated" or "heuristic" (see :func:`candidate_forms`)

    @property
    def name(self) -> str:
        """The usual label: ETS(A,Ad,M)."""
        letter = {None: "N", "add": "A", "mul": "M"}
        trend = letter[self.trend] + ("d" if self.damped else "")
        season = letter[self.seasonal] + (f"[{self.m}]" if self.seasonal else "")
        return f"ETS({letter[self.error]},{trend},{season})"

    @property
    def multiplicative(self) -> bool:
        """Whether the form needs positive values (a multiplicative error or season)."""
        return self.error == "mul" or self.seasonal == "mul"

    @property
    def param_names(self) -> list[str]:
        """The smoothing parameters of the form, in statsmodels' order."""
        have = (True, self.trend is not None, self.seasonal is not None, self.damped)
        return [name for name, used in zip(SMOOTHING, have) if used]

    def model(self, y: np.ndarray, initialization: str | None = None, **initial):
        """statsmodels' ETSModel of this form on ``y``."""
        from statsmodels.tsa.exponential_smoothing.ets import ETSModel

        return ETSModel(np.asarray(y, dtype=np.float64), error=self.error, trend=self.trend,
                        damped_trend=self.damped, seasonal=self.seasonal,
                        seasonal_periods=self.m if self.seasonal else None,
                        initialization_method=initialization or self.initialization, **initial)

    def to_json(self) -> dict:
        return {"kind": "ets", "error": self.error, "trend": self.trend, "damped": self.damped,
                "seasonal": self.seasonal, "m": self.m, "initialization": self.initialization}

    @classmethod
    def from_json(cls, form: dict) -> "EtsForm":
        out = cls(form["error"], form["trend"], form["damped"], form["seasonal"], form["m"], form["initialization"])
        if (out.error not in ("add", "mul") or out.trend not in (None, "add")
                or out.seasonal not in (None, "add", "mul")
                or out.initialization not in ("estimated", "heuristic")
                or not isinstance(out.damped, bool) or (out.damped and out.trend is None)
                or isinstance(out.m, bool) or not isinstance(out.m, int) or out.m < (2 if out.seasonal else 1)):
            raise ValueError(f"{form!r} is not an ETS form")
        return out


def candidate_forms(error, trend, damped, seasonal, m: int, initialization: str = "auto") -> list[EtsForm]:
    """The forms an ETSForecaster compares: every combination its arguments allow.

    ``error``: "add", "mul" or "auto" (both); ``trend``: None, "add" or "auto" (both); ``damped``: a bool
    or "auto" (both, where there is a trend); ``seasonal``: None, "add", "mul" or "auto" (none, and where
    m > 1 the additive season, plus the multiplicative one for a multiplicative error: an additive error
    with a multiplicative season is left to those who ask for it, as R's ``ets`` does).
    ``initialization``: "estimated", "heuristic", or "auto": estimated, except the heuristic for a season
    longer than :data:`SHORT_SEASON`.
    """
    errors = ("add", "mul") if error == "auto" else (error,)
    trends = (None, "add") if trend == "auto" else (trend,)
    out = []
    for e in errors:
        seasons = [seasonal]
        if seasonal == "auto":
            seasons = [None] if m <= 1 else ([None, "add", "mul"] if e == "mul" else [None, "add"])
        for s in seasons:
            for t in trends:
                dampings = (False,) if t is None else ((False, True) if damped == "auto" else (bool(damped),))
                init = initialization
                if init == "auto":
                    init = "heuristic" if s and m > SHORT_SEASON else "estimated"
                out += [EtsForm(e, t, d, s, m if s else 1, init) for d in dampings]
    return out


# ---------------------------------------------------------------------- fitting
#: the criteria :func:`fit_best` chooses by (statsmodels' names)
CRITERIA = ("aic", "aicc")


def criterion_value(criterion: str, llf: float, nobs: int, df_model: int) -> float:
    """statsmodels' ``aic`` or ``aicc`` of a fit (``df_model``: its free parameters and initial states,
    plus one for the variance, as statsmodels counts them); inf where it is not finite, and for AICc
    where no degree of freedom is left (n - df_model - 1 <= 0)."""
    from statsmodels.tools.eval_measures import aic, aicc

    if criterion == "aicc" and nobs - df_model - 1 <= 0:
        return np.inf
    with np.errstate(all="ignore"):
        value = float((aicc if criterion == "aicc" else aic)(llf, nobs, df_model))
    return value if np.isfinite(value) else np.inf


def fit_best(y: np.ndarray, forms: list[EtsForm], criterion: str = "aic") -> SeriesFit:
    """The form of lowest ``criterion`` ("aic" or "aicc") among ``forms`` fitted to ``y`` (forms that
    fail to fit, or leave no degree of freedom for AICc, are skipped; the first of equal values is kept);
    a constant series gets :func:`constant_fit`.

    Raises
    ------
    ValueError
        When no form could be fitted (the last error is chained).
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion={criterion!r} is not one of {CRITERIA}")
    y = np.asarray(y, dtype=np.float64)
    if len(y) and np.ptp(y) == 0:
        return constant_fit(y, forms)
    best, failure = None, None  # best: (value, form, model, params)
    for form in forms:
        try:
            model = form.model(y)
            df_model = model.k_params + 1  # statsmodels' df_model of the fit (ETSResults)
            if criterion == "aicc" and len(y) - df_model - 1 <= 0:
                failure = ValueError(f"{form.name} has {df_model} parameters and initial states, too many "
                                     f"for AICc on {len(y)} observations")
                continue
            params = model.fit(disp=False, return_params=True)
            value = criterion_value(criterion, model.loglike(params), len(y), df_model)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as err:
            failure = err
            continue
        if np.isfinite(value) and (best is None or value < best[0]):
            best = (value, form, model, params)
    if best is None:
        why = failure or "the likelihood of every form came out infinite or NaN"
        raise ValueError(f"no ETS form could be fitted ({why})") from failure
    _, best_form, model, params = best
    best = model.smooth(params)  # the results statsmodels' fit() returns for these parameters
    k = len(best_form.param_names)
    initial = initial_state(best_form, best)
    params = np.asarray(best.params[:k], dtype=np.float64)
    fit = SeriesFit(best_form.to_json(), params, initial, initial, 0, float(best.aic), float(best.sse), len(y))
    return fit.moved(states_of(best_form, best, initial)[-1], len(y))


def fit_lowest_aic(y: np.ndarray, forms: list[EtsForm]) -> SeriesFit:
    """:func:`fit_best` by AIC."""
    return fit_best(y, forms, "aic")


def fit_lowest_aicc(y: np.ndarray, forms: list[EtsForm]) -> SeriesFit:
    """:func:`fit_best` by AICc (the forecaster's choice)."""
    return fit_best(y, forms, "aicc")


def constant_fit(y: np.ndarray, forms: list[EtsForm]) -> SeriesFit:
    """The model of a constant series: the first (simplest) of ``forms``, its level the constant, no trend,
    a neutral season (0 added, or 1 multiplied), the smoothing parameters at statsmodels' start values
    (:data:`START`); its forecast is the constant.

    A constant leaves no error to fit: the likelihood is unbounded (statsmodels stops at its start
    values, with the AIC finite but meaningless for most constants and -inf for zeros, where it is
    refused), so the form is the simplest one allowed and the AIC is NaN. New observations then run
    through these parameters as through any fitted ones."""
    form, c = forms[0], float(y[0])
    season = (np.ones(form.m) if form.seasonal == "mul" else np.zeros(form.m)) if form.seasonal else np.empty(0)
    state = np.concatenate([[c, 0.0], season])
    params = np.array([START[name] for name in form.param_names], dtype=np.float64)
    return SeriesFit(form.to_json(), params, state, state, len(y), np.nan, 0.0, len(y))


def initial_state(form: EtsForm, source) -> np.ndarray:
    """``[level, trend, seasonal oldest first]`` before the first observation, from a statsmodels model
    or results object (``initial_level``, ``initial_trend``, ``initial_seasonal``)."""
    parts = [float(source.initial_level), float(source.initial_trend) if form.trend else 0.0]
    season = np.asarray(source.initial_seasonal, dtype=np.float64).ravel() if form.seasonal else np.empty(0)
    return np.concatenate([parts, season])


def states_of(form: EtsForm, res, initial: np.ndarray) -> np.ndarray:
    """(n, 2 + m') the state after each observation of a smoothed or fitted ``res``."""
    n = len(res.level)
    out = np.empty((n, len(initial)))
    out[:, 0] = res.level
    out[:, 1] = res.slope if form.trend else 0.0
    if form.seasonal:
        m = form.m
        season = np.concatenate([initial[2:], np.asarray(res.season, dtype=np.float64)])  # (m + n,) oldest first
        out[:, 2:] = season[np.arange(1, n + 1)[:, None] + np.arange(m)[None, :]]
    return out


def smoothing(fit: SeriesFit, y: np.ndarray, start: np.ndarray):
    """statsmodels' results of the model of ``fit`` run over ``y`` from the state ``start``, parameters fixed."""
    form = EtsForm.from_json(fit.form)
    known = {"initial_level": start[0], "initial_trend": start[1] if form.trend else None,
             "initial_seasonal": start[2:] if form.seasonal else None}
    return form.model(y, "known", **known).smooth(fit.params)


def smoothed(fit: SeriesFit, y: np.ndarray, start: np.ndarray) -> np.ndarray:
    """(n, 2 + m') the states after each value of ``y``, run from ``start`` with the fitted parameters."""
    return states_of(EtsForm.from_json(fit.form), smoothing(fit, y, start), start)


def moved_over(fit: SeriesFit, y: np.ndarray, start: np.ndarray, nobs: int, sse: float, scored: int) -> SeriesFit:
    """``fit`` run over ``y`` from ``start``: its state after the last value of ``y`` (observation ``nobs``),
    and the squared one-step errors of ``y`` (statsmodels' ``resid``: relative errors for a multiplicative
    error) added to ``sse`` over ``scored`` earlier ones."""
    res = smoothing(fit, y, start)
    state = states_of(EtsForm.from_json(fit.form), res, start)[-1]
    return fit.moved(state, nobs).with_errors(sse + float(np.sum(np.asarray(res.resid) ** 2)), scored + len(y))


# ---------------------------------------------------------------------- the family functions
def run(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    return moved_over(fit, y, fit.state, fit.nobs + len(y), fit.sse, fit.scored)


def replay(fit: SeriesFit, y: np.ndarray) -> SeriesFit:
    return moved_over(fit, y, fit.initial, len(y), 0.0, 0)


def restart(fit: SeriesFit, y: np.ndarray, start: int | None) -> SeriesFit:
    """The initial state from ``y`` by statsmodels' heuristic (``initialization_method="heuristic"``,
    the start values of its fits), then the fitted smoothing parameters; ``start`` is not needed."""
    form = EtsForm.from_json(fit.form)
    begin = initial_state(form, form.model(y, "heuristic"))
    return moved_over(fit, y, begin, len(y) if start is None else start + len(y), 0.0, 0)


def forecast_states(fit: SeriesFit, states: np.ndarray, h: int) -> np.ndarray:
    """(n, h) point forecasts from the states (n, 2 + m')."""
    form = EtsForm.from_json(fit.form)
    k = np.arange(1, h + 1)
    phi_k = np.cumsum(fit.params[-1] ** k) if form.damped else k.astype(np.float64)  # (h,)
    out = states[:, :1] + phi_k[None, :] * states[:, 1:2]  # (n, h)
    if form.seasonal:
        season = states[:, 2:][:, (k - 1) % form.m]  # (n, h)
        out = out * season if form.seasonal == "mul" else out + season
    return out


def forecast(fit: SeriesFit, h: int) -> np.ndarray:
    return forecast_states(fit, fit.state[None, :], h)[0]


def forecasts_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int) -> np.ndarray:
    return forecast_states(fit, smoothed(fit, y, fit.initial)[cutoffs], h)


#: the forms whose intervals statsmodels computes in closed form (``ETSResults.get_prediction``'s "exact"
#: method); the others' come from simulated paths
EXACT_FORMS = ("ANN", "AAN", "AAdN", "ANA", "AAA", "AAdA")
#: simulated paths per series for the intervals of the other forms (``get_prediction``'s default), and the
#: seed of their errors: the same intervals at every call
SIMULATIONS, SIMULATION_SEED = 1000, 0


def intervals(fit: SeriesFit, h: int, levels: tuple[float, ...]) -> np.ndarray:
    """(L, 2, h) lower and upper bounds of each level (a percentage) over the ``h`` steps after the last
    observation: statsmodels' ``ETSResults.get_prediction(...).pred_int(alpha)`` with ``alpha = 1 - level/100``
    for the results of this model in its state, the error variance ``fit.noise_variance`` (the fit's
    ``mse``, carried on over new observations).

    An additive form without a multiplicative part (:data:`EXACT_FORMS`) has the engine's closed form,
    ``point ± z · sqrt(mse · relative variance)`` (Hyndman et al.'s formulas, statsmodels'
    ``_relative_forecast_variance``); any other form the quantiles of :data:`SIMULATIONS` paths simulated
    by statsmodels from the state, the errors drawn with the seed :data:`SIMULATION_SEED` (the same as
    ``get_prediction(..., rng=np.random.default_rng(SIMULATION_SEED))``)."""
    from scipy.stats import norm

    variance = fit.noise_variance
    point = forecast(fit, h)  # (h,)
    # a results object starting from the state (anchor "start"): its values are placeholders, which neither the
    # closed form nor paths from the start read; ones, since a multiplicative form refuses a forecast <= 0 there
    res = smoothing(fit, np.ones(h), fit.state)
    alphas = 1.0 - np.asarray(levels, dtype=np.float64) / 100.0  # (L,)
    if res.model.short_name in EXACT_FORMS:
        half = norm.ppf(1 - alphas / 2)[:, None] * np.sqrt(variance * res._relative_forecast_variance(
            np.arange(1, h + 1)))[None, :]  # (L, h)
        return np.stack([point[None, :] - half, point[None, :] + half], axis=1)
    errors = np.random.default_rng(SIMULATION_SEED).standard_normal((h, SIMULATIONS)) * np.sqrt(variance)
    paths = np.asarray(res.simulate(h, anchor="start", repetitions=SIMULATIONS, random_errors=errors))  # (h, R)
    return np.stack([np.quantile(paths, alphas / 2, axis=1), np.quantile(paths, 1 - alphas / 2, axis=1)], axis=1)


def intervals_at(fit: SeriesFit, y: np.ndarray, cutoffs: np.ndarray, h: int, levels: tuple[float, ...]) -> np.ndarray:
    """(W, L, 2, h) :func:`intervals` after positions ``cutoffs`` of ``y`` (the series from its fitted start,
    smoothed once from the fitted initial state), each from the state there, with the fit's error variance."""
    states = smoothed(fit, y, fit.initial)[np.asarray(cutoffs)]  # (W, 2 + m')
    return np.stack([intervals(fit.moved(state, int(c) + 1), h, levels) for state, c in zip(states, cutoffs)])


def first_bad(fit: SeriesFit, y: np.ndarray) -> int:
    if not EtsForm.from_json(fit.form).multiplicative:
        return -1
    bad = np.flatnonzero(np.asarray(y) <= 0)
    return int(bad[0]) if bad.size else -1


def describe(fit: SeriesFit) -> tuple[str, dict]:
    form = EtsForm.from_json(fit.form)
    return form.name, dict(zip(form.param_names, fit.params.tolist()))


def check(fit: SeriesFit) -> None:
    form = EtsForm.from_json(fit.form)
    width = 2 + (form.m if form.seasonal else 0)
    if fit.params.shape != (len(form.param_names),) or fit.initial.shape != (width,) or fit.state.shape != (width,):
        raise ValueError(f"the saved arrays of an {form.name} have the wrong sizes")
