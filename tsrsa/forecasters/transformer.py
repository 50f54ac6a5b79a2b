"""TransformerForecaster: the patch transformer with any sequence-mixing kind, by name."""
from __future__ import annotations

import numbers

import numpy as np
import torch

from tsrsa.estimator.common_params import COMMON_PARAMS_DOC, neural_init
from tsrsa.estimator.neural import NeuralForecaster
from tsrsa.estimator.params import check_bool, check_choice, check_int, check_sequence_model
from tsrsa.estimator.spaces import sequence_space
from tsrsa.estimator.stream_state import StreamState
from tsrsa.estimator.window_state import WindowState
from tsrsa.nn.backbone import BackboneConfig, build_transformer
from tsrsa.nn.ensemble import members_of
from tsrsa.nn.registry import build_attention, get_attention


#: how known-future covariates reach a transformer's forecast
KNOWN_FUTURE = ("readout", "tokens")
AUTO = "auto"
#: TransformerForecaster's own arguments and their defaults, between ``input_size`` and the arguments every
#: neural forecaster shares (:data:`~tsrsa.estimator.common_params.COMMON_PARAMS`)
TRANSFORMER_PARAMS = (
    ("d_model", 64), ("n_heads", 4), ("n_layers", 2), ("d_ff", 128), ("dropout", 0.1),
    ("attention", "softmax"), ("attention_options", None), ("causal", None), ("revin", True), ("stream", False),
    ("readout_tokens", "auto"), ("known_future", "readout"), ("patch_len", 4),
)


class TransformerForecaster(NeuralForecaster):
    """Encoder-only patch transformer with a direct multi-horizon head; its sequence mixing is any
    registered attention kind (softmax by default).

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    input_size : int, optional
        Look-back window in steps. None: two horizons, at least one season (the frequency's natural
        period: 52 weekly, 12 monthly; the week of hourly data) and one patch, shortened on short series
        (docs/fit_plan.md);
        "auto": chosen among 96-720 steps on the validation windows (``tsrsa.estimator.lookback``).
    d_model : int, default 64
        Token width.
    n_heads : int, default 4
        Attention heads per layer (``d_model`` must be a multiple).
    n_layers : int, default 2
        Encoder blocks.
    d_ff : int, default 128
        Hidden width of each block's MLP.
    dropout : float, default 0.1
    attention : str, default "softmax"
        The sequence-mixing kind, one of ``tsrsa.nn.attention_kinds()``: "softmax" (the vanilla
        transformer), "rsa" (self-attention with recurrence; ``RSAForecaster`` adds its data start,
        ``plot_rem()`` and the REM heads in ``explain()``), ... (docs/attention.md lists them).
    attention_options : dict, optional
        The kind's own options (``tsrsa.nn.get_attention(kind).option_defaults()`` lists them and
        their defaults), checked by the kind at ``fit``.
    causal : bool, optional
        Every token reads only itself and earlier tokens, in every branch of the kind. None: True in
        the streaming configuration and for kinds that are causal only (``fast_weight``,
        ``block_recurrent``), else False.
    revin : bool, default True
        Instance normalisation: each window by its own mean and spread (RevIN); in the streaming
        configuration, by running statistics (``tsrsa.nn.RunningNorm``).
    stream : bool, default False
        The streaming configuration (docs/streaming.md): causal mixing with no learned positions
        (softmax attention gets ALiBi's relative positions, ``alibi=True``, unless
        ``attention_options`` says otherwise), each token forecasting the steps after it (trained on
        every token's target),
        running normalisation, and a recurrent state per series that ``update`` advances over new
        steps only and that ``predict(df=...)`` and cross-validation advance over the whole frame
        given. Needs a kind with a recurrent form and ``input_size`` a multiple of ``patch_len``.
    readout_tokens : int, "auto" or None, default "auto"
        How many of the latest token vectors the head reads to forecast. None: the window's token
        count ``input_size / patch_len``; 1: the latest token alone (a head of ``d_model`` inputs
        instead of ``d_model`` times the tokens). "auto": all of them, except in a fit on fewer
        than 2,000 training windows (``tsrsa.estimator.plan.SHORT_WINDOWS``: a series of up to
        about two thousand steps), where the head reads the latest ``ceil(h / patch_len)`` tokens, as many steps as it
        forecasts: a head of all the tokens has more weights than a few hundred windows can fit
        (docs/benchmark_configuration.md, "The library's defaults"); the streaming configuration and
        decoder tokens read all of them. ``readout_tokens_`` says how many a fitted model reads. In
        the streaming configuration the state keeps them; for fixed windows it is at most the
        window's token count (with decoder tokens of ``known_future="tokens"``, the latest of the
        whole sequence).
    known_future : {"readout", "tokens"}, default "readout"
        How known-future covariates (``future_covariates``, ``calendar``, ``holidays``) reach the
        forecast (docs/covariates.md): "readout", a term added to each horizon step from that step's
        values (``predict(h)`` needs ``h`` steps of them); "tokens", decoder tokens of the horizon's
        values that join the sequence after the look-back (``predict`` needs the whole trained
        horizon; fixed windows only). Chosen on validation in ``benchmarks/covariates.py``.
    {common}
    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import TransformerForecaster
    >>> y = pd.Series(np.sin(np.arange(200) / 4), index=pd.date_range("2024-01-01", periods=200, freq="h"))
    >>> f = TransformerForecaster(h=12, input_size=24, d_model=16, max_epochs=2, random_state=0).fit(y)
    >>> f.predict().shape
    (12, 3)
    >>> s = TransformerForecaster(h=12, input_size=24, d_model=16, stream=True, max_epochs=2, random_state=0).fit(y)
    >>> later = pd.Series(np.sin(np.arange(200, 206) / 4), index=pd.date_range("2024-01-09 08:00", periods=6, freq="h"))
    >>> s.update(later).predict()["ds"].iloc[0]
    Timestamp('2024-01-09 14:00:00')
    """

    __init__ = neural_init(TRANSFORMER_PARAMS)

    # ------------------------------------------------------------------ the kind
    def state_type(self) -> type:
        """The class of the fitted state, picked once from ``stream``: it answers every question the
        two configurations answer differently (windows, defaults, checks, what a fitted model keeps)."""
        return StreamState if self.stream else WindowState

    def future_steps(self, h: int) -> int:
        """Decoder tokens (``known_future="tokens"``) read the whole trained horizon's covariates."""
        return int(self.h) if self.known_future == "tokens" else h

    def attention_kind(self) -> type:
        """The registered class of this model's sequence-mixing kind (``tsrsa.nn.get_attention``)."""
        return get_attention(self.attention)

    def _attention_options(self, data_init=None) -> dict:
        """Arguments of the attention kind (``data_init``: what ``_prepare_fit`` estimated for this fit)."""
        return dict(self.attention_options or {})

    def _kind_options(self, data_init=None) -> dict:
        """The options the kind is built with: ``_attention_options()`` and the configuration's defaults."""
        return self.state_type().kind_options(self.attention_kind(), self._attention_options(data_init))

    def _causal(self) -> bool:
        if self.causal is not None:
            return bool(self.causal)
        return self.state_type().causal or not self.attention_kind().bidirectional

    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: optimiser, dropout, width, depth, token size and (given the
        estimator) its kind's own options; in the streaming configuration, only settings that stream."""
        patch_lens = [4, 8, 16]
        if estimator is not None:
            patch_lens = estimator.state_type().patch_lens(estimator, patch_lens)
        space = {**sequence_space(trial),
                 "d_model": trial.suggest_categorical("d_model", [16, 32, 64, 128]),
                 "n_layers": trial.suggest_int("n_layers", 1, 3),
                 "patch_len": trial.suggest_categorical("patch_len", patch_lens)}
        if estimator is not None:
            options = estimator.attention_kind().search_space(cls._kind_trial(trial), causal=estimator._causal())
            if options:
                space.update(cls._searched_options(estimator, options))
        return space

    @staticmethod
    def _kind_trial(trial):
        """The trial the kind's own space draws from (named estimators rename its suggestions)."""
        return trial

    @staticmethod
    def _searched_options(estimator, options: dict) -> dict:
        """Where sampled kind options go: inside ``attention_options`` (named estimators override)."""
        return {"attention_options": {**dict(estimator.attention_options or {}), **options}}

    def _check_architecture(self) -> None:
        check_sequence_model(self)
        for name in ("d_model", "n_heads", "n_layers", "d_ff"):
            check_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        check_bool("stream", self.stream)
        check_choice("known_future", self.known_future, KNOWN_FUTURE)
        reach = self.readout_tokens
        if isinstance(reach, str):
            if reach != AUTO:
                raise ValueError(f'readout_tokens={reach!r}: use "auto", None (every token of the window) or a '
                                 f'number of tokens >= 1')
        elif reach is not None:
            if isinstance(reach, (bool, np.bool_)) or not isinstance(reach, numbers.Integral):
                raise TypeError(f'readout_tokens must be "auto", None or an int >= 1, got {reach!r} '
                                f'({type(reach).__name__})')
            check_int("readout_tokens", reach)
        if self.causal is not None:
            check_bool("causal", self.causal)
        kind, state = self.attention_kind(), self.state_type()
        options = kind.check_options(self._kind_options())
        state.check(self, kind, options)
        with torch.random.fork_rng(devices=[]):  # a layer built to check the options draws no global numbers
            layer = build_attention(kind.kind, int(self.d_model), int(self.n_heads), dropout=float(self.dropout),
                                    causal=self._causal(), **options)
        state.check_layer(layer)

    def network_config(self, data_init=None) -> BackboneConfig:
        """The network's configuration (saved with a fitted model); ``data_init``: what ``_prepare_fit``
        estimated for this fit."""
        return BackboneConfig(
            input_size=self.resolved_input_size, h=int(self.h), patch_len=int(self.patch_len),
            d_model=int(self.d_model), n_heads=int(self.n_heads), n_layers=int(self.n_layers),
            d_ff=int(self.d_ff), dropout=float(self.dropout), attention=self.attention_kind().kind,
            attention_options=self._kind_options(data_init), causal=self._causal(),
            revin=bool(self.revin), **self.output_head.network_options(), stream=self.state_type().streams,
            readout_tokens=self.state_type().readout_tokens(self, self._auto_readout()),
        )

    def _auto_readout(self) -> int | None:
        """``readout_tokens="auto"`` for a fixed window, as the fit plan resolved it (a network built without a
        fit, as the integrations do, reads every token)."""
        plan = vars(self).get("plan_")
        return None if plan is None else plan.readout_tokens

    def short_readout(self, few_windows: bool) -> int | None:
        """The tokens ``readout_tokens="auto"`` reads (the rule is :mod:`tsrsa.estimator.plan`'s): on few
        training windows the latest ceil(h / patch_len) tokens, else (None) every token, as also with
        ``known_future="tokens"``, in the streaming configuration, or when those are all the window's tokens."""
        return self.state_type().short_readout(self, few_windows)

    @property
    def readout_tokens_(self) -> int:
        """How many of the latest token vectors the fitted head reads (``readout_tokens`` resolved)."""
        self.check_is_fitted()
        return int(members_of(self.network_)[0].readout_reach)

    def _covariate_layout(self) -> dict:
        return {**super()._covariate_layout(), "future_tokens": self.known_future == "tokens"}

    @staticmethod
    def build_network(config: BackboneConfig):
        return build_transformer(config)

    def required_length(self, panel) -> tuple[int, str]:
        need, why = super().required_length(panel)
        extra, reason = self.state_type().extra_length(self)
        return need + extra, why + reason

    def explain(self, member: int = 0):
        """The softmax attention of every (layer, head) by lag, on the last window of every fitted series
        (of an ensemble: its ``member``-th network); :mod:`tsrsa.estimator.explain`.

        Columns: layer, head, lag (query token minus key token: 1 is the token before; negative lags look
        ahead, in a bidirectional encoder), lag_steps (lag times ``patch_len``), weight (the share of a
        token's attention on the token ``lag`` tokens earlier, averaged over every token of every window;
        the weights of one (layer, head) sum to 1). ``frame.attrs["start_share"]``: the statistical
        start's part of the forecast (None without a start). Needs softmax attention and fixed windows.
        """
        from tsrsa.estimator.explain import attention_by_lag

        return attention_by_lag(self, member)

    def kept_history(self):
        """Which history each bounded key/value cache keeps now, per series and layer (and head, where
        the heads keep different tokens): a frame with the token's position in the series' stream and
        the timestamps of its first and last step. Needs ``stream=True`` and a bounded cache
        (``cache_size``, see docs/streaming.md)."""
        self.check_is_fitted()
        return self.memory_.kept_history(self)


TransformerForecaster.__doc__ = TransformerForecaster.__doc__.replace(
    "{common}", COMMON_PARAMS_DOC.strip("\n").lstrip()
)
