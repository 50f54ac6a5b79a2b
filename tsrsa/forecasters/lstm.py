"""LSTMForecaster: the recurrent baseline."""
from __future__ import annotations

from tsrsa.estimator.common_params import COMMON_PARAMS_DOC, neural_init
from tsrsa.estimator.neural import NeuralForecaster
from tsrsa.estimator.params import check_int, check_sequence_model
from tsrsa.estimator.spaces import sequence_space
from tsrsa.nn.lstm import LSTMConfig, LSTMNetwork

#: LSTMForecaster's own arguments and their defaults, between ``input_size`` and the arguments every neural
#: forecaster shares (:data:`~tsrsa.estimator.common_params.COMMON_PARAMS`)
LSTM_PARAMS = (("hidden_size", 64), ("n_layers", 2), ("dropout", 0.1), ("revin", True), ("patch_len", 8))


class LSTMForecaster(NeuralForecaster):
    """LSTM encoder over the look-back window with a direct multi-horizon head.

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    input_size : int, optional
        Look-back window in steps. None: two horizons, at least one season (the frequency's natural
        period: 52 weekly, 12 monthly; the week of hourly data) and one patch, shortened on short series
        (docs/fit_plan.md);
        "auto": chosen among 96-720 steps on the validation windows (``tsrsa.estimator.lookback``).
    hidden_size : int, default 64
        LSTM state width.
    n_layers : int, default 2
        Stacked LSTM layers.
    dropout : float, default 0.1
    revin : bool, default True
        Reversible instance normalisation of each window.
    {common}
    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import LSTMForecaster
    >>> y = pd.Series(np.sin(np.arange(200) / 4), index=pd.date_range("2024-01-01", periods=200, freq="h"))
    >>> f = LSTMForecaster(h=12, input_size=24, hidden_size=8, max_epochs=2, random_state=0).fit(y)
    >>> f.predict().shape
    (12, 3)
    """

    __init__ = neural_init(LSTM_PARAMS)

    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: optimiser, dropout, state width and depth."""
        return {**sequence_space(trial),
                "hidden_size": trial.suggest_categorical("hidden_size", [16, 32, 64, 128]),
                "n_layers": trial.suggest_int("n_layers", 1, 3)}

    def _check_architecture(self) -> None:
        check_sequence_model(self)
        check_int("hidden_size", self.hidden_size)
        check_int("n_layers", self.n_layers)

    def network_config(self, data_init=None) -> LSTMConfig:
        return LSTMConfig(
            input_size=self.resolved_input_size, h=int(self.h), patch_len=int(self.patch_len),
            hidden_size=int(self.hidden_size), n_layers=int(self.n_layers),
            dropout=float(self.dropout), revin=bool(self.revin),
            **self.output_head.network_options(),
        )

    @staticmethod
    def build_network(config: LSTMConfig) -> LSTMNetwork:
        return LSTMNetwork(config)

    def explain(self, member: int = 0):
        """How much each input step moves the forecast, on the last window of every fitted series (of an
        ensemble: its ``member``-th network); :mod:`tsrsa.estimator.explain`.

        Columns: lag (1: the window's last value, up to ``input_size``), sensitivity (the absolute
        gradient of the mean forecast with respect to that value, in the scaled units the network reads,
        averaged over the windows), share (of the sum over the window). ``frame.attrs["start_share"]``:
        the statistical start's part of the forecast (None without a start).
        """
        from tsrsa.estimator.explain import input_sensitivity

        return input_sensitivity(self, member)


LSTMForecaster.__doc__ = LSTMForecaster.__doc__.replace("{common}", COMMON_PARAMS_DOC.strip("\n").lstrip())
