"""TransformerForecaster: the patch transformer with any sequence-mixing kind, by name."""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from tsrsa.data.windows import consecutive_validation_windows
from tsrsa.forecasters import streaming
from tsrsa.forecasters.common_params import COMMON_PARAMS_DOC
from tsrsa.forecasters.estimator import store_init_args
from tsrsa.forecasters.neural import NeuralForecaster
from tsrsa.forecasters.params import check_bool, check_choice, check_int, check_sequence_model
from tsrsa.forecasters.spaces import sequence_space
from tsrsa.nn.backbone import BackboneConfig, build_transformer
from tsrsa.nn.registry import build_attention, get_attention


#: the options of a kind that bound its key/value cache (they act in the streaming configuration only)
CACHE_OPTIONS = ("cache_size", "cache_policy", "cache_sinks")
#: how known-future covariates reach a transformer's forecast
KNOWN_FUTURE = ("readout", "tokens")
AUTO = "auto"
#: ``readout_tokens="auto"`` shortens the head's reach in fits on fewer training windows than this: the
#: short series where it was measured have up to 1,700 windows, national_illness (4,300) and the other
#: long-horizon data sets, where the full head was kept, more (docs/benchmark_configuration.md)
READOUT_WINDOWS = 2000


class TransformerForecaster(NeuralForecaster):
    """Encoder-only patch transformer with a direct multi-horizon head; its sequence mixing is any
    registered attention kind (softmax by default).

    Parameters
    ----------
    h : int
        Forecast horizon (steps).
    input_size : int, optional
        Look-back window in steps; None uses ``2 * h`` (at least one patch, ``patch_len``).
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
        ``explain()`` and ``plot_rem()``), ... (docs/attention.md lists them).
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
        than 2,000 training windows (``READOUT_WINDOWS``: a series of up to about two thousand
        steps), where the head reads the latest ``ceil(h / patch_len)`` tokens, as many steps as it
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

    def __init__(
        self, h, *, input_size=None, d_model=64, n_heads=4, n_layers=2, d_ff=128, dropout=0.1,
        attention="softmax", attention_options=None, causal=None, revin=True, stream=False, readout_tokens="auto",
        known_future="readout", patch_len=4,
        loss="mse", quantiles=None, scaler="standard", fill=None, freq=None, max_epochs="auto", batch_size=32,
        batches_per_epoch=None, inference_batch_size=1024, learning_rate=1e-3, weight_decay=1e-4, lr_schedule=None,
        early_stopping_patience="auto", val_size=0, accelerator="auto", devices=None, strategy="auto", precision="32",
        compile=False, num_threads=None, random_state=None, verbose=0,
        past_covariates=None, future_covariates=None, static_covariates=None, calendar=None, holidays=None,
        unknown_categories="raise", covariate_norm=None, id_col="unique_id", time_col="ds", target_col="y",
    ):
        store_init_args(self, locals())

    # ------------------------------------------------------------------ the kind
    def _attention_kind(self) -> str:
        return self.attention

    def _attention_options(self) -> dict:
        """Arguments of the attention kind."""
        return dict(self.attention_options or {})

    def _kind_options(self) -> dict:
        """The options the kind is built with: ``_attention_options()`` and, in the streaming
        configuration, ALiBi relative positions for a kind that offers them (``alibi``; a learned
        position would fix the token count) unless the options say otherwise."""
        options = self._attention_options()
        if self.stream and "alibi" in get_attention(self._attention_kind()).option_defaults():
            options.setdefault("alibi", True)
        return options

    def _causal(self) -> bool:
        if self.causal is not None:
            return bool(self.causal)
        return bool(self.stream) or not get_attention(self._attention_kind()).bidirectional

    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Default space of ``tsrsa.tune``: optimiser, dropout, width, depth, token size and (given the
        estimator) its kind's own options; in the streaming configuration, only settings that stream."""
        patch_lens = [4, 8, 16]
        if estimator is not None and estimator.stream:  # windows of whole tokens
            patch_lens = [p for p in patch_lens if estimator._input_size % p == 0] or [estimator.patch_len]
        space = {**sequence_space(trial),
                 "d_model": trial.suggest_categorical("d_model", [16, 32, 64, 128]),
                 "n_layers": trial.suggest_int("n_layers", 1, 3),
                 "patch_len": trial.suggest_categorical("patch_len", patch_lens)}
        if estimator is not None:
            kind = get_attention(estimator._attention_kind())
            options = kind.search_space(trial, causal=estimator._causal())
            if options:
                space.update(cls._searched_options(estimator, options))
        return space

    @staticmethod
    def _searched_options(estimator, options: dict) -> dict:
        """Where sampled kind options go: inside ``attention_options`` (named estimators override)."""
        return {"attention_options": {**estimator._attention_options(), **options}}

    def _check_architecture(self) -> None:
        check_sequence_model(self)
        for name in ("d_model", "n_heads", "n_layers", "d_ff"):
            check_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        check_bool("stream", self.stream)
        check_choice("known_future", self.known_future, KNOWN_FUTURE)
        if self.known_future == "tokens" and self.stream:
            raise ValueError("known_future='tokens' puts the horizon's covariates in the sequence of a fixed "
                             "window; the streaming configuration reads them per token: use known_future='readout'")
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
        tokens = self._window_tokens()
        if isinstance(reach, numbers.Integral) and not self.stream and reach > tokens:
            raise ValueError(f"readout_tokens={self.readout_tokens}: the fixed-window head reads at most the window's "
                             f"{tokens} tokens (input_size={self._input_size}, patch_len={self.patch_len}); use a "
                             f"number up to {tokens}, or None for all of them")
        if self.causal is not None:
            check_bool("causal", self.causal)
        kind = get_attention(self._attention_kind())
        options = kind.check_options(self._kind_options())
        defaults = kind.option_defaults()
        cached = [f"{name}={options[name]!r}" for name in CACHE_OPTIONS if name in options
                  and options[name] != defaults[name]]
        if cached and not self.stream:
            raise ValueError(f"{', '.join(cached)} bound the key/value cache of the streaming configuration; a "
                             f"fixed-window model (stream=False) keeps no cache between forecasts: pass stream=True, "
                             f"or leave the cache options out")
        if self.stream:
            if self.causal is False:
                raise ValueError("stream=True reads each series as it arrives, so every layer must be causal; "
                                 "leave causal=None (or True)")
            if not kind.recurrent:
                raise ValueError(f"attention kind {kind.kind!r} has no recurrent form, so it cannot stream; "
                                 f"use stream=False or a kind with one")
            if not kind.streams_across_windows and self._covariate_spec().active:
                raise ValueError(f"attention kind {kind.kind!r} streams after training that carries its state from "
                                 f"window to window, which does not read covariates yet; use stream=False with "
                                 f"covariates")
            if self.batches_per_epoch is not None and self._carries_state():
                raise ValueError(f"attention kind {kind.kind!r} trains with its state carried through every window of "
                                 f"each series in order, so an epoch cannot stop after a few batches; leave "
                                 f"batches_per_epoch=None")
            if self._input_size % int(self.patch_len):
                raise ValueError(f"stream=True trains on windows of whole tokens: input_size={self._input_size} "
                                 f"must be a multiple of patch_len={self.patch_len}")
        with torch.random.fork_rng(devices=[]):  # a layer built to check the options draws no global numbers
            layer = build_attention(kind.kind, int(self.d_model), int(self.n_heads), dropout=float(self.dropout),
                                    causal=self._causal(), **options)
        if self.stream:
            layer.check_streamable()

    def _network_config(self) -> BackboneConfig:
        levels = self._quantile_levels()
        return BackboneConfig(
            input_size=self._input_size, h=int(self.h), patch_len=int(self.patch_len),
            d_model=int(self.d_model), n_heads=int(self.n_heads), n_layers=int(self.n_layers),
            d_ff=int(self.d_ff), dropout=float(self.dropout), attention=self._attention_kind(),
            attention_options=self._kind_options(), causal=self._causal(),
            revin=bool(self.revin), n_outputs=len(levels) if levels else 1, stream=bool(self.stream),
            readout_tokens=self._readout_tokens(),
        )

    def _window_tokens(self) -> int:
        """Tokens of a fixed window, as ``BackboneConfig.n_tokens``."""
        return math.ceil(self._input_size / int(self.patch_len))

    def _readout_tokens(self) -> int | None:
        """The head's reach, resolved (saved with the network; None: a fixed window's every token).
        "auto" reads the fit's number of training windows, which ``fit`` records before it builds the
        network (a network built without a fit, as the integrations do, reads every token)."""
        if self.readout_tokens == AUTO and not self.stream:
            windows = getattr(self, "_fit_windows", None)
            if windows is None or windows >= READOUT_WINDOWS or self.known_future == "tokens":
                return None
            reach = math.ceil(int(self.h) / int(self.patch_len))
            return reach if reach < self._window_tokens() else None
        if self.readout_tokens not in (None, AUTO):
            return int(self.readout_tokens)
        return self._input_size // int(self.patch_len) if self.stream else None

    @property
    def readout_tokens_(self) -> int:
        """How many of the latest token vectors the fitted head reads (``readout_tokens`` resolved)."""
        self._check_is_fitted()
        network = self.network_
        streaming = getattr(network, "readout_tokens", None)  # the streaming network keeps it; a fixed window's head
        return int(streaming if streaming is not None else network.head.reads)

    def _covariate_layout(self) -> dict:
        return {**super()._covariate_layout(), "future_tokens": self.known_future == "tokens"}

    @staticmethod
    def _build_network(config: BackboneConfig):
        return build_transformer(config)

    # ------------------------------------------------------------------ the streaming configuration
    def _min_length(self, panel) -> tuple[int, str]:
        need, why = super()._min_length(panel)
        if not self.stream:
            return need, why
        extra = int(self.patch_len) - 1  # the last token forecasts h + patch_len - 1 steps
        return need + extra, f"{why} + patch_len - 1 = {extra} (each token forecasts h + patch_len - 1 steps)"

    def _carries_state(self) -> bool:
        """Whether training carries the state from window to window (a streaming kind whose state a
        window from the empty state would never have read further than that window)."""
        return bool(self.stream) and not get_attention(self._attention_kind()).streams_across_windows

    def _training_windows(self, scaled, offsets, fit_lengths):
        if not self.stream:
            return super()._training_windows(scaled, offsets, fit_lengths)
        if self._carries_state():
            return streaming.consecutive_token_windows(self, scaled, offsets, fit_lengths)
        return streaming.token_training_windows(self, scaled, offsets, fit_lengths)

    def _validation_windows(self, scaled, offsets, fit_lengths):
        if self._carries_state():
            return consecutive_validation_windows(scaled, offsets, fit_lengths, self._input_size, int(self.h))
        return super()._validation_windows(scaled, offsets, fit_lengths)

    def kept_history(self):
        """Which history each bounded key/value cache keeps now, per series and layer (and head, where
        the heads keep different tokens): a frame with the token's position in the series' stream and
        the timestamps of its first and last step. Needs ``stream=True`` and a bounded cache
        (``cache_size``, see docs/streaming.md)."""
        self._check_is_fitted()
        memory = self.memory_
        if not self.stream or not any(name.endswith(".pos") for g in memory.groups for name in g.state):
            raise ValueError("kept_history() needs a fitted model with stream=True and a bounded cache: set "
                             "cache_size (RSAForecaster) or attention_options={'cache_size': k}")
        return streaming.kept_history(memory, self.freq_, int(self.patch_len), self.id_col)

    def _set_fitted(self, panel, network, history, loc, scale, encoded=None) -> None:
        super()._set_fitted(panel, network, history, loc, scale, encoded)
        if self.stream:
            self.memory_ = streaming.streamed_memory(self, panel, self.memory_)

    def _memory_for(self, panel):
        memory = super()._memory_for(panel)
        return streaming.streamed_memory(self, panel, memory) if self.stream else memory

    def _continued_memory(self, panel, known):
        memory = super()._continued_memory(panel, known)
        return streaming.continued_streams(self, memory, panel, known) if self.stream else memory

    def _forecast_memory(self, memory, h: int, future_df=None):
        if not self.stream:
            return super()._forecast_memory(memory, h, future_df)
        future = self._horizon_covariates(memory.ids, memory.last, h, future_df)  # (S, H, F) or None
        forecast = None
        if future is not None and memory.context is not None:
            forecast = streaming.forecast_with_future(self, memory, future)
        return self._output_columns(streaming.stored_forecast(memory, h, forecast))

    def _forecast_cutoffs(self, panel, cutoffs, h: int):
        if not self.stream:
            return super()._forecast_cutoffs(panel, cutoffs, h)
        return self._output_columns(streaming.forecast_at_cutoffs(self, panel, cutoffs, h))

    def _fitted_state(self):
        state, arrays, weights = super()._fitted_state()
        if self.stream:
            streaming.save_streams(self.memory_, state, arrays)
        return state, arrays, weights

    def _restore_fitted_state(self, state, arrays, weights, device) -> None:
        super()._restore_fitted_state(state, arrays, weights, device)
        if self.stream:
            self.memory_ = streaming.load_streams(self.memory_, state, arrays)


TransformerForecaster.__doc__ = TransformerForecaster.__doc__.replace(
    "{common}", COMMON_PARAMS_DOC.strip("\n").lstrip()
)
