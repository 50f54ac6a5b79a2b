"""SeasonalNaiveForecaster: repeat the last season (the sanity floor)."""
from __future__ import annotations

import numpy as np

from tsrsa.estimator.base import BaseForecaster
from tsrsa.estimator.params import check_int
from tsrsa.estimator.protocol import store_init_args
from tsrsa.estimator.window_state import WindowState


class SeasonalNaiveForecaster(BaseForecaster):
    """Forecast each step with the value one season earlier: ŷ[T+k] = y[T+k-m·⌈k/m⌉].

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    season_length : int, optional
        Season m in steps. None takes the first natural period of the frequency (24 for
        hourly, 7 daily, 52 weekly, 12 monthly, 4 quarterly; 1 where there is none, e.g.
        yearly); integer time needs it given.
    conformal_windows : int, optional
        Hold out the last ``conformal_windows`` horizons of every series to calibrate conformal
        prediction intervals, ``predict(level=[80, 95])`` (one extra fit; see
        :mod:`tsrsa.estimator.conformal`). None: no intervals.
    fill : {"ffill", "interpolate", "zero"} or None, default None
        How to fill missing timestamps and NaN values; None makes them errors.
    freq : str or int, optional
        pandas offset alias or integer step; inferred when None.
    id_col, time_col, target_col : str, default "unique_id", "ds", "y"
        Column names of long frames, in and out.

    ``predict(h)`` forecasts any number of steps; ``h`` is the default and the horizon of
    cross-validation and of the conformal calibration.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import SeasonalNaiveForecaster
    >>> y = pd.Series([1.0, 2.0, 3.0, 1.5, 2.5, 3.5], index=pd.RangeIndex(6))
    >>> SeasonalNaiveForecaster(h=4, season_length=3).fit(y).predict()["yhat"].tolist()
    [1.5, 2.5, 3.5, 1.5]
    >>> z = pd.Series(np.arange(60.0) % 7 + np.cos(np.arange(60.0)), index=pd.RangeIndex(60))
    >>> f = SeasonalNaiveForecaster(h=3, season_length=7, conformal_windows=9).fit(z)
    >>> list(f.predict(level=[80]).columns)
    ['unique_id', 'ds', 'yhat', 'yhat_lo_80', 'yhat_hi_80']
    """

    #: ``predict(h)`` takes any number of steps: the last season repeats as far as asked
    forecasts_any_horizon = True

    def __init__(self, h, *, season_length=None, conformal_windows=None, fill=None, freq=None,
                 id_col="unique_id", time_col="ds", target_col="y"):
        store_init_args(self, locals())

    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: the season among common lengths."""
        return {"season_length": trial.suggest_categorical("season_length", [1, 4, 7, 12, 24, 52, 96, 168])}

    def check_params(self) -> None:
        super().check_params()
        check_int("season_length", self.season_length, allow_none=True)

    def _season(self, panel) -> int:
        if self.season_length is not None:
            return int(self.season_length)
        if not panel.freq.is_datetime:
            raise ValueError(
                "SeasonalNaiveForecaster on integer time needs season_length= (the season in steps)"
            )
        periods = panel.freq.natural_periods()
        return periods[0] if periods else 1

    def required_length(self, panel) -> tuple[int, str]:
        m = self._season(panel)
        return m, f"one season of season_length={m}"

    def _fit(self, panel, **fit_options) -> None:
        self.season_length_ = self._season(panel)
        self.memory_ = WindowState.from_panel(panel, self.season_length_)

    def forecast_windows(self, tails, loc, scale, h: int, covariates=None) -> dict[str, np.ndarray]:
        m = self.season_length_
        return {"yhat": tails[:, -m:][:, np.arange(h) % m]}  # (n, h)

    def restore_fitted(self, state, arrays, weights, device) -> None:
        super().restore_fitted(state, arrays, weights, device)
        self.season_length_ = self.memory_.tails.shape[1]
