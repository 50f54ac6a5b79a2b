"""ETSForecaster: exponential smoothing (error, trend, season) per series, statsmodels' ETSModel."""
from __future__ import annotations

import numpy as np

from tsrsa.data.validation import format_id
from tsrsa.estimator.params import check_choice
from tsrsa.estimator.protocol import store_init_args
from tsrsa.estimator.statistical import StatisticalForecaster, statistical_doc
from tsrsa.statistical.ets_model import CRITERIA, candidate_forms, fit_best


def seasonal_length(m: int) -> int:
    """The values a seasonal ETS form needs for its initial states: two seasons of m, and at least 10 + 2 (m // 2)."""
    return max(2 * m, 10 + 2 * (m // 2))


class ETSForecaster(StatisticalForecaster):
    """ETS exponential smoothing, one statsmodels ``ETSModel`` per series, the form chosen by AICc.

    Each series gets the form of lowest AICc (statsmodels' ``aicc``) among those its arguments allow
    (every combination of ``error``, ``trend``, ``damped`` and ``seasonal``). The defaults search every
    admissible form, as R's ``ets`` (``restrict=TRUE``) and statsforecast's ``AutoETS`` do: additive and
    multiplicative error, no / additive / damped trend, no / additive season, and the multiplicative
    season with the multiplicative error (no additive error with a multiplicative season, no
    multiplicative trend): 15 forms with a season, 6 without. Multiplicative forms are searched only for
    a series whose values are all > 0; season forms only where m > 1 (a series needs two seasons). The
    smoothing parameters and the initial states are estimated by maximum likelihood (a season longer
    than 24 steps takes statsmodels' heuristic initial states instead; see ``initialization``).
    ``params_`` lists each series' form, its AIC and its parameters. ``update(df)`` runs the fitted
    smoothing recursions over the new observations, parameters fixed (no refit); see
    :mod:`tsrsa.statistical.ets_model`.

    Each argument restricts the search: ``error="add"`` keeps the additive-error forms, ``trend=None``
    the forms without a trend, ``damped=False`` the undamped ones, ``seasonal=None`` the non-seasonal
    ones. ``error="add", criterion="aic"`` is the default before 0.16: the six additive forms (no /
    additive / damped trend, without and with an additive season) chosen by AIC. The engine is
    statsmodels' ``ETSModel``: statsforecast's ``AutoETS`` (2.1.1, the build available) requires
    pandas < 3, and this package runs on pandas 3. A search of the 15 forms costs about 0.6 s per
    quarterly and 0.9 s per monthly M3 series on one core; ``n_jobs`` fits series in parallel.

    Parameters
    ----------
    {series}
    error : {"auto", "add", "mul"}, default "auto"
        Additive or multiplicative errors, or both compared ("mul" only for a series with every value > 0;
        "auto" leaves the multiplicative forms out for the others).
    trend : {"auto", "add"} or None, default "auto"
        No trend (None), an additive one, or both compared.
    damped : bool or "auto", default "auto"
        Whether a trend is damped, or both compared. True needs a trend.
    seasonal : {"auto", "add", "mul"} or None, default "auto"
        The season: none, additive, multiplicative, or "auto": none and, where m > 1, the additive season
        (and the multiplicative one with a multiplicative error) on a series of two seasons or more (a shorter
        one is searched among the forms without a season, since 0.19.5; before, it was refused). "add" and
        "mul" need m > 1 and two seasons.
    initialization : {"auto", "estimated", "heuristic"}, default "auto"
        The initial states: estimated with the smoothing parameters by maximum likelihood, or set by
        statsmodels' heuristic (several times faster; AICc then counts the smoothing parameters alone);
        "auto": estimated, except the heuristic for a season longer than 24 steps.
    criterion : {"aicc", "aic"}, default "aicc"
        What chooses the form: AICc (R's ``ets``, ``AutoETS``), or AIC (the default before 0.16).
    {common}

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import ETSForecaster
    >>> t = np.arange(48)
    >>> y = pd.Series(10 + 0.5 * t + 2 * np.sin(2 * np.pi * t / 4), index=pd.RangeIndex(48))
    >>> f = ETSForecaster(h=4, season_length=4, error="add", trend="add", damped=False, seasonal="add").fit(y)
    >>> f.params_.loc[0, "model"]
    'ETS(A,A,A[4])'
    >>> np.round(f.predict()["yhat"].to_numpy(), 2).tolist()
    [34.0, 36.5, 35.0, 33.5]
    """

    kind = "ets"
    model_intervals = True

    def __init__(self, h, *, season_length=None, error="auto", trend="auto", damped="auto", seasonal="auto",
                 initialization="auto", criterion="aicc", n_jobs=1, conformal_windows=None, fill=None, freq=None,
                 verbose=0, id_col="unique_id", time_col="ds", target_col="y"):
        store_init_args(self, locals())

    def check_params(self) -> None:
        super().check_params()
        check_choice("error", self.error, ("add", "mul", "auto"))
        check_choice("trend", self.trend, ("add", "auto"), allow_none=True)
        check_choice("seasonal", self.seasonal, ("add", "mul", "auto"), allow_none=True)
        check_choice("initialization", self.initialization, ("auto", "estimated", "heuristic"))
        check_choice("criterion", self.criterion, CRITERIA)
        if not (isinstance(self.damped, (bool, np.bool_)) or self.damped == "auto"):
            raise ValueError(f"damped={self.damped!r} is not supported; use True, False or 'auto'")
        if not isinstance(self.damped, str) and self.damped and self.trend is None:
            raise ValueError("damped=True damps a trend, and trend=None has none: pass trend='add' (or 'auto'), or "
                             "leave damped at 'auto'")

    def minimum_length(self, m: int) -> tuple[int, str]:
        if self.seasonal in ("add", "mul") and m < 2:
            raise ValueError(f"seasonal={self.seasonal!r} needs a season of at least 2 steps, and the season here "
                             f"is {m}: pass season_length=m (e.g. 12 for monthly data), or seasonal=None")
        if self.seasonal in ("add", "mul") and m > 1:
            return seasonal_length(m), f"two seasons of season_length={m} for the ETS initial states"
        return 10, "ten observations for the ETS initial states"

    def fit_series(self, panel, i: int):
        y = panel.series(i)
        forms = candidate_forms(self.error, self.trend, self.damped, self.seasonal, self.season_length_,
                          self.initialization)
        if self.seasonal == "auto" and len(y) < seasonal_length(self.season_length_):
            forms = [form for form in forms if form.seasonal is None]  # too short for a season's initial states
        bad = np.flatnonzero(y <= 0)
        if bad.size:
            forms = [form for form in forms if not form.multiplicative]
            if not forms:
                when = panel.freq.shift(panel.first[i:i + 1], bad[:1])[0]
                raise ValueError(
                    f"series {format_id(panel.ids[i])} has the value {y[bad[0]]:g} at {when}: error={self.error!r} "
                    f"with seasonal={self.seasonal!r} is multiplicative and needs every value > 0; pass "
                    f"error='add' (or 'auto') and seasonal 'add', 'auto' or None, or shift the series above 0")
        try:
            return fit_best(y, forms, self.criterion)
        except ValueError as err:
            raise self.failed(panel, i, err) from err


ETSForecaster.__doc__ = statistical_doc(ETSForecaster.__doc__)
