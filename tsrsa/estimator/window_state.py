"""The fitted state of a fixed-window forecaster, and the fixed-window configuration.

A fitted forecaster keeps, as ``memory_``, what ``predict`` needs without data: per series its id,
last timestamp, last T values and scaling statistics (and, with covariates, their encoded last T
steps and the statics). :class:`WindowState` is that memory with what a fitted model does with it,
each call given the model (whose public surface it reads: ``forecast_windows``, ``covariates_``,
``freq_``, ``network_``, its parameters) and returning a new state, never changing itself:

- ``for_frame(model, panel)``: the state of another frame's series (``predict(df=...)``): known ids
  keep their fitted statistics, new ones get their own;
- ``advance(model, panel, known)``: after new observations (``update``): each window slides over
  them; new series join at the end;
- ``forecast(model, h, future_df)``: the next ``h`` steps of every series; ``forecast_outputs(model, h,
  future_df)``, the head's outputs behind them (scaled units), which a neural model's ``sample`` draws from;
- ``forecast_at(model, panel, cutoffs, h)``: forecasts after given positions of a frame's series
  (cross-validation and scoring without a refit);
- ``to_files()`` / ``from_files(state, arrays)``: what a saved model holds of it.

The class also says how a network that carries this state trains (its windows, the length a series
needs, the defaults and checks of the configuration): :class:`~tsrsa.estimator.stream_state.StreamState`
answers the same questions for the streaming configuration, and an estimator picks one of the two
once (``stream=``) and asks it.
"""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from tsrsa.data.covariates import CovariateSpec, future_rows
from tsrsa.data.cycles import window_inputs
from tsrsa.data.index_encoding import decode_index, decode_times, encode_index, encode_times
from tsrsa.data.memory import EncodedCovariates, SeriesMemory, WindowCovariates
from tsrsa.data.scalers import check_scaled
from tsrsa.data.validation import format_id
from tsrsa.data.windows import training_windows, validation_windows
from tsrsa.nn.patches import n_tokens

#: what to do about a value too large for the network once scaled
SCALED_FIX = "check the value (a unit or typing error?), or refit on data that include this level"
#: the options of a kind that bound its key/value cache (they act in the streaming configuration only)
CACHE_OPTIONS = ("cache_size", "cache_policy", "cache_sinks")


def covariate_encoder(model):
    """The fitted ``model``'s covariate encoder: None for a model that takes no covariates (its
    ``takes_covariates``) or was fitted without them."""
    return model.covariates_ if model.takes_covariates else None


def encoded(model, panel) -> EncodedCovariates | None:
    """``panel``'s covariates encoded as the fitted ``model`` reads them (None without covariates)."""
    encoder = covariate_encoder(model)
    return None if encoder is None else EncodedCovariates(*encoder.encode_panel(panel))


def check_range(model, panel, loc: np.ndarray, scale: np.ndarray, statistics: str) -> None:
    """A ValueError when a value of ``panel``, scaled by ``loc``/``scale`` (S,), lies beyond what the
    network of ``model`` computes with (a model that reads raw values checks nothing)."""
    if model.reads_scaled:
        check_scaled(panel, loc, scale, statistics=statistics, fix=SCALED_FIX)


class WindowState(SeriesMemory):
    """A fixed-window model's memory of its series, and what the model does with it (module docstring)."""

    # ------------------------------------------------------------------ the configuration
    #: every layer causal by default (the fixed-window configuration: only kinds that need it)
    causal = False
    #: how window covariates are normalised unless ``covariate_norm`` says
    covariate_norm = "window"
    #: whether the network streams (``BackboneConfig.stream``)
    streams = False
    #: why the configuration fits one network only (None: an ensemble may average several)
    one_network = None
    #: why the configuration takes no statistical start (the rest of a refusal; None: it may take one)
    no_start = None

    @classmethod
    def extra_length(cls, model) -> tuple[int, str]:
        """Steps a series needs beyond input, horizon and validation, and why (none here)."""
        return 0, ""

    @classmethod
    def training_windows(cls, model, scaled, offsets, fit_lengths):
        """The training windows: ``input_size`` inputs and the ``h`` targets after them."""
        return training_windows(scaled, offsets, fit_lengths, model.resolved_input_size, int(model.h))

    @classmethod
    def validation_windows(cls, model, scaled, offsets, fit_lengths):
        """The validation windows: their ``h`` targets in each series' held-out part."""
        return validation_windows(scaled, offsets, fit_lengths, model.resolved_input_size, int(model.h))

    @classmethod
    def kind_options(cls, kind, options: dict) -> dict:
        """The options a kind is built with, from the user's (as given here)."""
        return options

    @classmethod
    def readout_tokens(cls, model, auto: int | None) -> int | None:
        """The head's reach: ``readout_tokens`` resolved, ``auto`` its "auto" value for this fit."""
        reach = model.readout_tokens
        return auto if reach == "auto" else (None if reach is None else int(reach))

    @classmethod
    def short_readout(cls, model, few_windows: bool) -> int | None:
        """The tokens a transformer's ``readout_tokens="auto"`` reads (the rule is :mod:`tsrsa.estimator.plan`'s):
        on few training windows the latest ceil(h / patch_len) tokens, else (None) every token, as also with
        ``known_future="tokens"`` or when those are all the window's tokens."""
        if not few_windows or model.known_future == "tokens":
            return None
        reach = n_tokens(model.h, model.patch_len)
        return reach if reach < n_tokens(model.resolved_input_size, model.patch_len) else None

    @classmethod
    def patch_lens(cls, model, candidates: list[int]) -> list[int]:
        """The patch lengths ``tsrsa.tune`` may try (every one for fixed windows)."""
        return candidates

    @classmethod
    def check(cls, model, kind, options: dict) -> None:
        """The configuration's own checks of a transformer's arguments, at ``fit``."""
        tokens = n_tokens(model.resolved_input_size, model.patch_len)
        reach = model.readout_tokens
        if isinstance(reach, numbers.Integral) and not isinstance(reach, bool) and reach > tokens:
            raise ValueError(f"readout_tokens={reach}: the fixed-window head reads at most the window's {tokens} "
                             f"tokens (input_size={model.resolved_input_size}, patch_len={model.patch_len}); use a "
                             f"number up to {tokens}, or None for all of them")
        defaults = kind.option_defaults()
        cached = [f"{name}={options[name]!r}" for name in CACHE_OPTIONS if name in options
                  and options[name] != defaults[name]]
        if cached:
            raise ValueError(f"{', '.join(cached)} bound the key/value cache of the streaming configuration; a "
                             f"fixed-window model (stream=False) keeps no cache between forecasts: pass stream=True, "
                             f"or leave the cache options out")

    @classmethod
    def check_layer(cls, layer) -> None:
        """What the configuration asks of a layer it builds (nothing for fixed windows)."""

    # ------------------------------------------------------------------ building
    @classmethod
    def from_fit(cls, model, panel, loc, scale, covariates: EncodedCovariates | None = None) -> "WindowState":
        """The state after fitting on ``panel``: each series' last ``input_size`` values."""
        return cls(**vars(SeriesMemory.from_panel(panel, model.resolved_input_size, loc, scale, covariates)))

    def for_frame(self, model, panel) -> "WindowState":
        """The state of ``panel``'s series: statistics of known ids kept from fitting, those of new ids
        from their own history in ``panel``."""
        scaler = model.scaler if model.reads_scaled else None
        memory = self.for_new_data(panel, self.tails.shape[1], scaler, encoded(model, panel))
        check_range(model, panel, memory.loc, memory.scale, "its statistics (fitted, or its own for a new series)")
        return WindowState(**vars(memory))

    def advance(self, model, panel, known: np.ndarray) -> "WindowState":
        """The state after ``update``: ``panel`` holds new observations, ``known`` (S_panel,) the row
        of each of its series here (-1: a new series, its whole history in ``panel``; new series join
        at the end)."""
        seen = np.flatnonzero(known >= 0)
        check_range(model, panel.take(seen), self.loc[known[seen]], self.scale[known[seen]],
                    "the statistics the model fitted for it")
        fresh = np.flatnonzero(known < 0)
        new = self.for_frame(model, panel.take(fresh)) if fresh.size else None
        out = self._continued(panel, known, encoded(model, panel) if self.covariates is not None else None)
        return out if new is None else out.append(new)

    def _continued(self, panel, known: np.ndarray, rows: EncodedCovariates | None) -> "WindowState":
        """This memory with the known series of ``panel`` continued (:meth:`SeriesMemory.continued`)."""
        return WindowState(**vars(self.continued(panel, known, rows)))

    def append(self, other: "WindowState") -> "WindowState":
        """This state followed by ``other``'s series (same look-back)."""
        return WindowState(**vars(SeriesMemory.append(self, other)))

    # ------------------------------------------------------------------ forecasting
    def forecast(self, model, h: int, future_df=None) -> dict[str, np.ndarray]:
        """Forecasts ``{column: (S, h)}`` after the end of every series."""
        return model.forecast_windows(self.tails, self.loc, self.scale, h, self._inputs(model, h, future_df))

    def forecast_outputs(self, model, h: int, future_df=None) -> np.ndarray:
        """The head's outputs (S, h, Q) behind ``forecast``, in the series' scaled units (``loc``, ``scale``),
        from a neural model (its ``window_outputs``)."""
        return model.window_outputs(self.tails, self.loc, self.scale, h, self._inputs(model, h, future_df))

    def _inputs(self, model, h: int, future_df) -> WindowCovariates | None:
        """The covariates of the windows this state forecasts from (None without covariates)."""
        future = horizon_covariates(model, self.ids, self.last, h, future_df)
        given = None if self.covariates is None else WindowCovariates(self.covariates, future, self.static_num,
                                                                      self.static_cat)
        return window_inputs(given, model.learned_cycle(), model.freq_, self.ids, self.last, self.tails.shape[1])

    def forecast_at(self, model, panel, cutoffs: np.ndarray, h: int) -> dict[str, np.ndarray]:
        """Forecasts after positions ``cutoffs`` (S, W) of every series of ``panel`` (the series this state
        holds, in its order): ``{column: (W * S, h)}``, window-major (cross-validation)."""
        check_range(model, panel, self.loc, self.scale, "the statistics of its training part")
        T = self.tails.shape[1]
        ends = (panel.offsets[:-1, None] + cutoffs).T.ravel()  # (W * S,) window-major
        inputs = ends[:, None] - T + 1 + np.arange(T)[None, :]  # (W * S, T)
        reps = cutoffs.shape[1]
        covariates = None
        rows = encoded(model, panel)
        if rows is not None:  # the frame's own covariates: the look-back's, and the known-future ones after it
            series = np.tile(np.arange(panel.n_series), reps)  # (W * S,)
            future = model.covariates_.future_after(rows.time, ends, panel.offsets[1:][series], int(model.h))
            covariates = WindowCovariates(rows.time[inputs], future, np.tile(rows.static_num, (reps, 1)),
                                          np.tile(rows.static_cat, (reps, 1)))
        cycle = model.learned_cycle()
        if cycle is not None:  # the timestamps of the windows' last steps
            stamps, series = panel.stamps_at(ends)
            covariates = window_inputs(covariates, cycle, model.freq_, panel.ids.take(series), stamps, T)
        return model.forecast_windows(panel.values[inputs], np.tile(self.loc, reps), np.tile(self.scale, reps), h,
                                      covariates)

    def kept_history(self, model) -> pd.DataFrame:
        """Which history bounded caches keep: only the streaming configuration has caches."""
        raise ValueError("kept_history() needs a fitted model with stream=True and a bounded cache: set "
                         "attention_options={'cache_size': k}")

    # ------------------------------------------------------------------ saving
    def to_files(self) -> tuple[dict, dict]:
        """(JSON-able state, arrays) of this state for a saved model."""
        state = {"ids": encode_index(self.ids), "last": encode_times(self.last)}
        arrays = {"tails": self.tails, "loc": self.loc, "scale": self.scale}
        if self.covariates is not None:
            arrays.update(covariates=self.covariates, static_num=self.static_num, static_cat=self.static_cat)
        return state, arrays

    @classmethod
    def from_files(cls, state: dict, arrays: dict) -> "WindowState":
        """The state ``to_files`` wrote (KeyError/TypeError/ValueError when it is not one)."""
        return WindowState(ids=decode_index(state["ids"]), last=decode_times(state["last"]), tails=arrays["tails"],
                           loc=arrays["loc"], scale=arrays["scale"], covariates=arrays.get("covariates"),
                           static_num=arrays.get("static_num"), static_cat=arrays.get("static_cat"))


def horizon_covariates(model, ids: pd.Index, last: pd.Index, h: int, future_df) -> np.ndarray | None:
    """Known-future channels (S, H, F) of the ``h`` steps after ``last`` (zeros after step h; the whole
    trained horizon H for decoder tokens, ``known_future="tokens"``), from ``future_df`` and the
    timestamps; None when the model reads none."""
    encoder = covariate_encoder(model)
    spec = encoder.spec if encoder is not None else CovariateSpec()
    if future_df is not None and not spec.future:
        raise ValueError(f"future_df was given, but this {type(model).__name__} declares no future covariates: "
                         f"it has nothing to read there; leave future_df out, or refit with "
                         f"covariates=tsrsa.Covariates(future=[...])")
    if encoder is None or encoder.n_future == 0:
        return None
    if spec.future and future_df is None:
        raise ValueError(f"this model reads the known-future covariates {list(spec.future)}: pass "
                         f"future_df= with their values for the next {h} step(s) of every series")
    H, h = int(model.h), model.future_steps(h)
    stamps = model.freq_.future(last, h)
    frame = future_rows(future_df, ids, stamps, h, spec, model.id_col, model.time_col) if spec.future else None
    return encoder.encode_horizon(frame, stamps, ids, h, H, lambda row: f"in future_df for series "
                                  f"{format_id(ids[row // h])} at {stamps[row]}")
