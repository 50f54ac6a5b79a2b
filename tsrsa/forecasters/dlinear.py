"""DLinearForecaster: the linear reference of the long-horizon benchmark."""
from __future__ import annotations

from tsrsa.estimator.common_params import COMMON_PARAMS_DOC, neural_init
from tsrsa.estimator.neural import NeuralForecaster
from tsrsa.estimator.params import check_int
from tsrsa.estimator.spaces import training_space
from tsrsa.nn.dlinear import DLinearConfig, DLinearNetwork


#: the moving-average window of the DLinear paper (Zeng et al. 2023), in steps
PAPER_KERNEL = 25
#: the windows ``tsrsa.tune`` searches by default
KERNEL_SIZES = (13, 25, 49)
#: DLinearForecaster's own argument and its default, between ``input_size`` and the arguments every neural
#: forecaster shares (:data:`~tsrsa.estimator.common_params.COMMON_PARAMS`); no ``patch_len``: no tokens
DLINEAR_PARAMS = (("kernel_size", None),)


class DLinearForecaster(NeuralForecaster):
    """DLinear (Zeng et al., AAAI 2023): a moving-average trend/remainder split of the look-back
    window and one linear map from each part to the horizon, shared by every series.

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    input_size : int, optional
        Look-back window in steps. None: two horizons, at least one season (the frequency's natural
        period: 52 weekly, 12 monthly; the week of hourly data) and one patch, shortened on short series
        (docs/fit_plan.md);
        "auto": chosen among 96-720 steps on the validation windows (``tsrsa.estimator.lookback``).
    kernel_size : int, optional
        Moving-average window of the trend, in steps, at most ``input_size``; the window's ends are
        padded by repeating its first and last values. None: the paper's 25 steps, or the whole input
        when it is shorter.
    {common}
    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import DLinearForecaster
    >>> y = pd.Series(np.sin(np.arange(200) / 4), index=pd.date_range("2024-01-01", periods=200, freq="h"))
    >>> f = DLinearForecaster(h=12, input_size=24, max_epochs=2, random_state=0).fit(y)
    >>> f.predict().shape
    (12, 3)
    """

    __init__ = neural_init(DLINEAR_PARAMS)

    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: optimiser settings and the trend's window (those up to the
        estimator's input length)."""
        windows = [k for k in KERNEL_SIZES if estimator is None or k <= estimator.resolved_input_size] or [None]
        return {**training_space(trial), "kernel_size": trial.suggest_categorical("kernel_size", windows)}

    def _check_architecture(self) -> None:
        check_int("kernel_size", self.kernel_size, allow_none=True)
        if self.kernel_size is not None and self.kernel_size > self.resolved_input_size:
            raise ValueError(f"kernel_size={self.kernel_size} is longer than input_size={self.resolved_input_size}: the "
                             f"trend would average mostly padding; use kernel_size <= input_size, or None (the "
                             f"paper's 25, shortened to the input)")

    def _kernel_size(self) -> int:
        """``kernel_size`` resolved: None is the paper's window, at most the input's length."""
        return int(self.kernel_size) if self.kernel_size is not None else min(PAPER_KERNEL, self.resolved_input_size)

    def network_config(self, data_init=None) -> DLinearConfig:
        return DLinearConfig(
            input_size=self.resolved_input_size, h=int(self.h), kernel_size=self._kernel_size(),
            **self.output_head.network_options(),
        )

    @staticmethod
    def build_network(config: DLinearConfig) -> DLinearNetwork:
        return DLinearNetwork(config)

    def explain(self, member: int = 0):
        """The weights of the trend and remainder maps on each input step (of an ensemble: its
        ``member``-th network); :mod:`tsrsa.estimator.explain`.

        Columns: component ("trend", "remainder"), lag (1: the window's last value), weight and
        abs_weight (the map's weights on that step, signed and absolute, averaged over the horizon's
        steps and outputs), share (of the absolute weights of both maps). ``frame.attrs["start_share"]``:
        the statistical start's part of the forecast on the last window of every fitted series (None
        without a start).
        """
        from tsrsa.estimator.explain import linear_weights

        return linear_weights(self, member)


# the common arguments less patch_len (DLinear has no tokens)
_COMMON = "    loss :" + COMMON_PARAMS_DOC.split("    loss :", 1)[1]
DLinearForecaster.__doc__ = DLinearForecaster.__doc__.replace("{common}", _COMMON.strip("\n").lstrip())
