"""TransformerForecaster: the vanilla softmax-attention twin of RSAForecaster."""
from __future__ import annotations

from tsrsa.forecasters.base import _store_init_args
from tsrsa.forecasters.neural import COMMON_PARAMS_DOC, NeuralForecaster
from tsrsa.forecasters.params import check_bool, check_int, check_sequence_model
from tsrsa.forecasters.spaces import sequence_space
from tsrsa.nn.backbone import BackboneConfig, ForecastingTransformer


class TransformerForecaster(NeuralForecaster):
    """Encoder-only patch transformer with softmax attention and a direct multi-horizon head.

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    input_size : int, optional
        Look-back window in steps; None uses ``2 * h``.
    d_model : int, default 64
        Token width.
    n_heads : int, default 4
        Attention heads per layer (``d_model`` must be a multiple).
    n_layers : int, default 2
        Encoder blocks.
    d_ff : int, default 128
        Hidden width of each block's MLP.
    dropout : float, default 0.1
    causal : bool, default False
        Mask later tokens in the look-back (each token sees itself and the past).
    revin : bool, default True
        Reversible instance normalisation of each window.
    {common}
    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import TransformerForecaster
    >>> y = pd.Series(np.sin(np.arange(200) / 4), index=pd.date_range("2024-01-01", periods=200, freq="h"))
    >>> f = TransformerForecaster(h=12, input_size=24, d_model=16, max_epochs=2, random_state=0).fit(y)
    >>> f.predict().shape
    (12, 3)
    """

    _attention = "softmax"

    def __init__(
        self, h, *, input_size=None, d_model=64, n_heads=4, n_layers=2, d_ff=128, dropout=0.1,
        causal=False, revin=True, patch_len=4, loss="mse", quantiles=None, scaler="standard",
        fill=None, freq=None, max_epochs=20, batch_size=64, inference_batch_size=1024,
        learning_rate=1e-3, weight_decay=1e-4, lr_schedule=None, early_stopping_patience=None,
        val_size=0, accelerator="auto", devices=None, strategy="auto", precision="32", num_threads=None,
        random_state=None, verbose=0, id_col="unique_id", time_col="ds", target_col="y",
    ):
        _store_init_args(self, locals())

    @classmethod
    def search_space(cls, trial) -> dict:
        """Default space of ``tsrsa.tune``: optimiser, dropout, width, depth and token size."""
        return {**sequence_space(trial),
                "d_model": trial.suggest_categorical("d_model", [16, 32, 64, 128]),
                "n_layers": trial.suggest_int("n_layers", 1, 3),
                "patch_len": trial.suggest_categorical("patch_len", [4, 8, 16])}

    def _check_architecture(self) -> None:
        check_sequence_model(self)
        for name in ("d_model", "n_heads", "n_layers", "d_ff"):
            check_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        check_bool("causal", self.causal)

    def _attention_options(self) -> dict:
        """Arguments of the attention kind (none for softmax)."""
        return {}

    def _network_config(self) -> BackboneConfig:
        levels = self._quantile_levels()
        return BackboneConfig(
            input_size=self._input_size, h=int(self.h), patch_len=int(self.patch_len),
            d_model=int(self.d_model), n_heads=int(self.n_heads), n_layers=int(self.n_layers),
            d_ff=int(self.d_ff), dropout=float(self.dropout), attention=self._attention,
            attention_options=self._attention_options(), causal=bool(self.causal),
            revin=bool(self.revin), n_outputs=len(levels) if levels else 1,
        )

    @staticmethod
    def _build_network(config: BackboneConfig) -> ForecastingTransformer:
        return ForecastingTransformer(config)


TransformerForecaster.__doc__ = TransformerForecaster.__doc__.replace(
    "{common}", COMMON_PARAMS_DOC.strip("\n").lstrip()
)
