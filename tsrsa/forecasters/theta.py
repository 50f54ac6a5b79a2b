"""ThetaForecaster: the Theta method per series, as the M3 competition ran it."""
from __future__ import annotations

from tsrsa.estimator.params import check_bool, check_float
from tsrsa.estimator.protocol import store_init_args
from tsrsa.estimator.statistical import StatisticalForecaster, statistical_doc
from tsrsa.statistical.theta_model import fit_theta


class ThetaForecaster(StatisticalForecaster):
    """The Theta method (Assimakopoulos and Nikolopoulos 2000) as the M3 competition ran it, per series.

    With ``deseasonalize`` (the default) and a season m > 1, a series whose autocorrelation at lag m
    passes M3's 90 % test (|r_m| > 1.645·sqrt((1 + 2·Σ_{k<m} r_k²)/n)) is divided by the seasonal
    indices of a classical multiplicative decomposition (additive for a series with a value <= 0).
    The adjusted series is then split into its theta lines: the least-squares line (theta = 0),
    extrapolated, and the theta = 2 line, extrapolated by simple exponential smoothing whose alpha is
    fitted to that line; the two are averaged and re-seasonalised. This equals SES of the adjusted
    series with half the line's slope as drift (Hyndman and Billah 2003), which is how the state is
    kept: ``update(df)`` adjusts and smooths the new observations with the fitted parameters (no
    refit); ``params_`` lists each series' slope ``b0``, ``alpha`` and seasonal indices; see
    :mod:`tsrsa.statistical.theta_model`, which also says where statsmodels' ``ThetaModel`` (used
    before 0.16) differs: a seasonality test that finds more seasons, and alpha fitted to the
    adjusted series instead of the theta line.

    Without ``conformal_windows``, ``predict(level=[80, 95])`` gives the intervals of R's
    ``forecast::thetaf`` (since 0.20.1): SES's h-step variance, sigma²·(1 + alpha²·(h − 1)), about the
    adjusted forecast, re-seasonalised; sigma² is the mean squared one-step error of the fit.

    Parameters
    ----------
    {series}
    deseasonalize : bool, default True
        Test each series for a season of m steps (M3's test) and adjust it where one is found; a series
        shorter than two seasons is not tested, nor adjusted (as R's ``thetaf``; since 0.19.5: before, it was
        refused).
    theta : float, default 2.0
        The theta line smoothed, theta·X − (theta − 1)·line, combined with the line by weights 1/theta and
        (theta − 1)/theta: the slope enters times (theta − 1)/theta (theta >= 1; 1 is simple exponential
        smoothing; 2 is M3's).
    {common}

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import ThetaForecaster
    >>> y = pd.Series(10 + 0.3 * np.arange(40.0) + np.cos(np.arange(40.0)), index=pd.RangeIndex(40))
    >>> f = ThetaForecaster(h=3).fit(y)
    >>> sorted(f.params_.columns)
    ['aic', 'alpha', 'b0', 'model', 'unique_id']
    """

    kind = "theta"
    model_intervals = True

    def __init__(self, h, *, season_length=None, deseasonalize=True, theta=2.0, n_jobs=1, conformal_windows=None,
                 fill=None, freq=None, verbose=0, id_col="unique_id", time_col="ds", target_col="y"):
        store_init_args(self, locals())

    def check_params(self) -> None:
        super().check_params()
        check_bool("deseasonalize", self.deseasonalize)
        check_float("theta", self.theta, minimum=1.0)

    def minimum_length(self, m: int) -> tuple[int, str]:
        return 10, "ten observations"  # a series shorter than two seasons is not tested for one, nor adjusted

    def fit_series(self, panel, i: int):
        try:
            return fit_theta(panel.series(i), self.season_length_, bool(self.deseasonalize), float(self.theta))
        except (ValueError, ArithmeticError) as err:
            raise self.failed(panel, i, err) from err


ThetaForecaster.__doc__ = statistical_doc(ThetaForecaster.__doc__)
