"""The statistical references of the M4 benchmark, fitted per series.

- ``SeasonalNaive``: tsrsa's :class:`~tsrsa.forecasters.SeasonalNaiveForecaster` with season m;
- ``Naive2``: the competition's (:mod:`tsrsa.benchmarking.naive2`);
- ``Theta``: statsmodels' ThetaModel (SES with drift, theta = 2) on the series seasonally adjusted
  as for Naive2, re-seasonalised: the competition's Theta benchmark;
- ``ETS``: statsmodels' ETSModel, the form of smallest AIC, with a season of m where the M4 test
  finds one;
- ``ETS-adjusted``: the non-seasonal ETS forms on the adjusted series, as M4's SES, Holt and Damped
  benchmarks treat seasonality.

statsmodels is imported inside the functions that fit.
"""
from __future__ import annotations

import json
import time
import warnings

import numpy as np

from tsrsa.benchmarking.m4 import M4Split
from tsrsa.benchmarking.naive2 import deseasonalise, is_seasonal, naive2

#: the references by name, in the order of the results tables
REFERENCES = ("SeasonalNaive", "Naive2", "Theta", "ETS", "ETS-adjusted")

#: ETS forms (error, trend, damped) among which AIC chooses for a non-seasonal series, and the same
#: with the season of m steps (additive or multiplicative) for a series seasonal by ``is_seasonal``
ETS_FORMS = (("add", None, False), ("add", "add", True), ("mul", None, False), ("mul", "add", True))
ETS_SEASONAL_FORMS = tuple(form + (season,) for form, season in zip(ETS_FORMS, ("add", "add", "mul", "mul")))


def theta(y, m: int, h: int) -> tuple[np.ndarray, dict]:
    """The competition's Theta benchmark on one series.

    Parameters
    ----------
    y : array (n,)
    m : int
        Season of the adjustment (as for Naive2).
    h : int

    Returns
    -------
    forecast : numpy.ndarray
        (h,)
    info : dict
        Whether the series was seasonally adjusted, and theta.
    """
    from statsmodels.tsa.forecasting.theta import ThetaModel

    adjusted, future_index = deseasonalise(y, m, h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ThetaModel(adjusted, period=1, deseasonalize=False).fit()
        fc = np.asarray(res.forecast(h, theta=2.0))
    return fc * future_index, {"seasonal": bool(future_index.std() > 0), "theta": 2.0}


def best_ets(y, forms, h: int, **options) -> tuple[np.ndarray | None, tuple | None]:
    """The forecast of the ETS form of smallest AIC among ``forms``.

    Parameters
    ----------
    y : array (n,)
    forms : sequence of tuple
        (error, trend, damped[, season]) as in :data:`ETS_FORMS` and :data:`ETS_SEASONAL_FORMS`.
    h : int
    **options
        Passed to ETSModel for the forms with a season (``seasonal_periods``, ``initialization_method``).

    Returns
    -------
    forecast : numpy.ndarray or None
        (h,), or None when no form fits or the forecast is not finite.
    form : tuple or None
        The chosen form.
    """
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    best, best_form = None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for form in forms:
            error, trend, damped, season = (form + (None,))[:4]
            try:
                res = ETSModel(y, error=error, trend=trend, damped_trend=damped, seasonal=season,
                               **(options if season else {})).fit(disp=False)
            except Exception:  # noqa: BLE001 - a form that does not fit is skipped
                continue
            if np.isfinite(res.aic) and (best is None or res.aic < best.aic):
                best, best_form = res, form
        fc = np.asarray(best.forecast(h)) if best is not None else None
    if fc is None or not np.isfinite(fc).all():
        return None, None
    return fc, best_form


def ets(y, m: int, h: int) -> tuple[np.ndarray, dict]:
    """statsmodels' ETSModel on one series, the form of smallest AIC.

    Among :data:`ETS_SEASONAL_FORMS` (season m, initial states by statsmodels' heuristic, which
    keeps 24 seasonal states out of the optimiser) for a seasonal series, among :data:`ETS_FORMS`
    otherwise; the naive forecast where no form fits.

    Returns
    -------
    forecast : numpy.ndarray
        (h,)
    info : dict
        The chosen form.
    """
    if is_seasonal(y, m):
        fc, form = best_ets(y, ETS_SEASONAL_FORMS, h, seasonal_periods=m, initialization_method="heuristic")
    else:
        fc, form = best_ets(y, ETS_FORMS, h)
    if fc is None:
        return np.full(h, y[-1]), {"form": "naive (no form fitted)"}
    return fc, {"form": ",".join(str(part) for part in form)}


def ets_adjusted(y, m: int, h: int) -> tuple[np.ndarray, dict]:
    """Non-seasonal ETS (:data:`ETS_FORMS`, AIC) on the series seasonally adjusted as for Naive2,
    re-seasonalised.

    Returns
    -------
    forecast : numpy.ndarray
        (h,)
    info : dict
        Whether the series was adjusted, and the chosen form ("naive" where none fits).
    """
    adjusted, future_index = deseasonalise(y, m, h)
    fc, form = best_ets(adjusted, ETS_FORMS, h)
    if fc is None:
        return adjusted[-1] * future_index, {"seasonal": bool(future_index.std() > 0), "form": "naive"}
    return fc * future_index, {"seasonal": bool(future_index.std() > 0), "form": ",".join(str(p) for p in form)}


def run_statistical(split: M4Split, name: str) -> tuple[np.ndarray, dict, float, float]:
    """One run of a reference on every series of a split.

    Parameters
    ----------
    split : M4Split
        Each history is fitted on its own; its horizon is forecast.
    name : str
        One of :data:`REFERENCES`.

    Returns
    -------
    forecasts : numpy.ndarray
        (S, h) in the order of ``split.ids``.
    params : dict
        What ran: the season, and how often each form was chosen.
    fit_seconds, predict_seconds : float
        Wall time (a per-series method counts it all as fitting).
    """
    f = split.frequency
    if name == "SeasonalNaive":
        from tsrsa.forecasters import SeasonalNaiveForecaster

        model = SeasonalNaiveForecaster(h=f.h, season_length=f.m, freq=1)
        began = time.perf_counter()
        model.fit(split.frame())
        fitted = time.perf_counter()
        by_id = model.predict().sort_values(["unique_id", "ds"]).groupby("unique_id")["yhat"]
        fc = np.stack([by_id.get_group(s).to_numpy() for s in split.ids])
        return fc, model.get_params(), fitted - began, time.perf_counter() - fitted
    if name not in REFERENCES:
        raise ValueError(f"unknown reference {name!r}; choose from {', '.join(REFERENCES)}")
    began = time.perf_counter()
    if name == "Naive2":
        fc = np.stack([naive2(split.history[s], f.m, f.h) for s in split.ids])
        params = {"m": f.m, "season_test": "M4 90% acf test at lag m", "decomposition": "classical multiplicative"}
    else:
        method = {"Theta": theta, "ETS": ets, "ETS-adjusted": ets_adjusted}[name]
        out = [method(split.history[s], f.m, f.h) for s in split.ids]
        fc = np.stack([o[0] for o in out])
        chosen: dict = {}
        for _, info in out:
            key = json.dumps(info, sort_keys=True)
            chosen[key] = chosen.get(key, 0) + 1
        params = {"m": f.m, "per_series": chosen}
        if name in ("Theta", "ETS-adjusted"):
            params["deseasonalised"] = "as for Naive2 where seasonal"
        if name.startswith("ETS"):
            params.update(forms=[list(x) for x in ETS_FORMS], selection="AIC")
        if name == "ETS":
            params.update(seasonal_forms=[list(x) for x in ETS_SEASONAL_FORMS],
                          seasonal_initialization="heuristic")
    return fc, params, time.perf_counter() - began, 0.0
