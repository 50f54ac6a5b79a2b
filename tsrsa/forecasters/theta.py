"""ThetaForecaster: the Theta method per series, statsmodels' ThetaModel."""
from __future__ import annotations

from tsrsa.estimator.params import check_bool, check_float
from tsrsa.estimator.protocol import store_init_args
from tsrsa.estimator.statistical import StatisticalForecaster, statistical_doc
from tsrsa.statistical.theta_model import fit_theta


class ThetaForecaster(StatisticalForecaster):
    """The Theta method (Assimakopoulos and Nikolopoulos 2000, as Hyndman and Billah 2003 read it), one
    statsmodels ``ThetaModel`` per series.

    Simple exponential smoothing with a drift: half (``theta=2``) of a least-squares trend line's slope
    added to the smoothed level. With ``deseasonalize`` (the default) a series that statsmodels' test
    finds seasonal at lag m is adjusted by a classical decomposition first (multiplicative for a positive
    series) and the forecast re-seasonalised. ``update(df)`` adjusts and smooths the new observations with
    the fitted parameters (no refit); ``params_`` lists each series' slope ``b0``, ``alpha`` and seasonal
    indices; see :mod:`tsrsa.statistical.theta_model`.

    Parameters
    ----------
    {series}
    deseasonalize : bool, default True
        Test each series for a season of m steps and adjust it where one is found.
    theta : float, default 2.0
        The weight of the trend line: its slope enters times (theta - 1) / theta (theta >= 1; 1 is simple
        exponential smoothing).
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

    def __init__(self, h, *, season_length=None, deseasonalize=True, theta=2.0, conformal_windows=None, fill=None,
                 freq=None, verbose=0, id_col="unique_id", time_col="ds", target_col="y"):
        store_init_args(self, locals())

    def check_params(self) -> None:
        super().check_params()
        check_bool("deseasonalize", self.deseasonalize)
        check_float("theta", self.theta, minimum=1.0)

    def minimum_length(self, m: int) -> tuple[int, str]:
        if self.deseasonalize and m > 1:
            return max(10, 2 * m), f"two seasons of season_length={m} for the seasonal adjustment"
        return 10, "ten observations"

    def fit_series(self, panel, i: int):
        try:
            return fit_theta(panel.series(i), self.season_length_, bool(self.deseasonalize), float(self.theta))
        except (ValueError, ArithmeticError) as err:
            raise self.failed(panel, i, err) from err


ThetaForecaster.__doc__ = statistical_doc(ThetaForecaster.__doc__)
