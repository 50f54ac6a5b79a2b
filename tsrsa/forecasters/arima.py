"""ARIMAForecaster: (seasonal) ARIMA per series, statsmodels' SARIMAX, orders given or chosen as auto.arima does."""
from __future__ import annotations

import numbers

import numpy as np

from tsrsa.estimator.protocol import store_init_args
from tsrsa.estimator.statistical import StatisticalForecaster, statistical_doc
from tsrsa.statistical.arima_model import SHORT_SEASON
from tsrsa.statistical.arima_search import fit_arima_series


def check_orders(name: str, value, allow_none: bool = False) -> None:
    """``value`` is "auto" or three integers >= 0 (a tuple or list; None too where allowed)."""
    if value == "auto" or (value is None and allow_none):
        return
    if isinstance(value, (tuple, list)) and len(value) == 3 and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and v >= 0 for v in value):
        return
    shape = "(P, D, Q)" if name == "seasonal_order" else "(p, d, q)"
    extra = ", None" if allow_none else ""
    raise ValueError(f"{name}={value!r} is not supported; use 'auto'{extra} or three integers >= 0, {shape}")


class ARIMAForecaster(StatisticalForecaster):
    """(Seasonal) ARIMA, one statsmodels ``SARIMAX`` per series, orders given or chosen as ``auto.arima`` does.

    With both orders "auto" (the default) each series gets R's ``auto.arima``: d and D as it picks them (KPSS
    test with R's lag, trunc(3 sqrt(n) / 13); the seasonal strength of R's ``mstl`` decomposition above 0.64;
    d at most 1), then its stepwise search (Hyndman & Khandakar 2008) of p and q up
    to 5, P and Q up to 1 (auto.arima: 2) and a constant, by AICc, from four starting forms to the first
    neighbour that lowers it, until none does (about 20 forms a series instead of a grid's 27 or 54); a form
    with an AR or MA root near the unit circle is left out. A season longer than 24 steps enters as 2, 4 or 6
    Fourier sine/cosine pairs (by least squares AIC) with ARMA errors instead. The constant is a mean when
    d + D = 0 and a drift when d + D = 1. A given order replaces the searched one, and the other is searched
    over (p, q) in {0, 1, 2}^2 or (P, Q) in {(0, 0), (1, 0), (0, 1)} by AIC. The parameters are fitted by
    maximum likelihood on the differenced series; the state is the Kalman filter of the model on the series,
    which ``update(df)`` continues over the new observations, parameters fixed (no refit). ``params_`` lists
    each series' orders and parameters; see :mod:`tsrsa.statistical.arima_search` and
    :mod:`tsrsa.statistical.arima_model`.

    Parameters
    ----------
    {series}
    order : "auto" or (p, d, q), default "auto"
        The non-seasonal orders, or searched.
    seasonal_order : "auto", (P, D, Q) or None, default "auto"
        The seasonal orders of the season m, searched, or None for no seasonal part. A nonzero one needs
        m > 1, and three seasons of values; searched, P and Q are at most n // (3 m) and D is 0 up to two
        seasons of values, as auto.arima's, and a season above 24 steps (Fourier terms) needs two seasons, so a
        shorter series (ten values or more) keeps what it can hold (since 0.19.5; before, it was refused).
    {common}

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import ARIMAForecaster
    >>> y = pd.Series(np.cumsum(np.random.default_rng(0).standard_normal(60)), index=pd.RangeIndex(60))
    >>> f = ARIMAForecaster(h=3, order=(1, 1, 0), seasonal_order=None).fit(y)
    >>> f.params_.loc[0, "model"]
    'ARIMA(1,1,0)'
    >>> f.predict()["yhat"].shape
    (3,)
    """

    kind = "arima"
    model_intervals = True

    def __init__(self, h, *, season_length=None, order="auto", seasonal_order="auto", n_jobs=1,
                 conformal_windows=None, fill=None, freq=None, verbose=0, id_col="unique_id", time_col="ds",
                 target_col="y"):
        store_init_args(self, locals())

    def check_params(self) -> None:
        super().check_params()
        check_orders("order", self.order)
        check_orders("seasonal_order", self.seasonal_order, allow_none=True)

    def seasonal(self, m: int):
        """The seasonal orders in use: "auto", (P, D, Q), or None (no seasonal part)."""
        if self.seasonal_order is None or m < 2:
            if self.seasonal_order not in (None, "auto") and any(self.seasonal_order):
                raise ValueError(f"seasonal_order={self.seasonal_order!r} needs a season of at least 2 steps, and "
                                 f"the season here is {m}: pass season_length=m (e.g. 12 for monthly data), or "
                                 f"seasonal_order=None")
            return None
        if self.seasonal_order != "auto" and not any(self.seasonal_order):
            return None
        return self.seasonal_order if self.seasonal_order == "auto" else tuple(int(v) for v in self.seasonal_order)

    def minimum_length(self, m: int) -> tuple[int, str]:
        seasonal = self.seasonal(m)
        fixed = 0 if self.order == "auto" else sum(int(v) for v in self.order) + 2
        if seasonal is None or seasonal == "auto":  # the search leaves out the seasonal part a series cannot hold
            return max(10, fixed), "ten observations, and the order's lags" if fixed > 10 else "ten observations"
        return max(3 * m, fixed), f"three seasons of season_length={m} for the seasonal differences and lags"

    def fit_series(self, panel, i: int):
        m = self.season_length_
        seasonal = self.seasonal(m)
        y = panel.series(i)
        if seasonal == "auto" and m > SHORT_SEASON and len(y) < 2 * m:
            seasonal = None  # too short for the Fourier terms of a long season: searched without one
        order = self.order if self.order == "auto" else tuple(int(v) for v in self.order)
        try:
            return fit_arima_series(y, m if seasonal is not None else None, order,
                                    seasonal if seasonal is not None else (0, 0, 0))
        except (ValueError, RuntimeError, np.linalg.LinAlgError) as err:
            raise self.failed(panel, i, err) from err


ARIMAForecaster.__doc__ = statistical_doc(ARIMAForecaster.__doc__)
