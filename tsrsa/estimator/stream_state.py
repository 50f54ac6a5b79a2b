"""The fitted state of the streaming configuration: every series' recurrent state.

A transformer forecaster with ``stream=True`` keeps, per series, the state its network
(``tsrsa.nn.StreamingTransformer``) reached over the whole history it has seen, and the forecast of
the last token that history completed (a token is ``patch_len`` steps, counted from the first step
of the series). :class:`StreamState` answers what :class:`~tsrsa.estimator.window_state.WindowState`
answers, for that state:

- after a fit, every series' training history is streamed once;
- ``forecast`` reads the stored forecasts. A token forecasts the ``h + patch_len - 1`` steps after
  its end; with ``r`` steps waiting in a partial patch, the ``h`` steps after the last observation
  are that forecast's steps ``r + 1 .. r + h``. A partial patch changes nothing until it completes;
- ``advance`` (``update``) streams the new steps only: O(new steps) for recurrent state (a softmax
  kind's key/value cache grows by one entry per token);
- ``for_frame`` (``predict(df=...)``) and ``forecast_at`` (cross-validation without refit) stream
  each series of the frame given from its first step, so they score the predictor ``update`` serves.

Series that have streamed the same number of steps share one batched state (a ``StreamGroup``,
its state a ``tsrsa.nn.StreamingState``; :mod:`tsrsa.estimator.stream_runs` runs the network over
the groups). The state is cut, joined, moved and saved by its own methods; saving keeps its flat
names (``stream.{group}.{name}``, e.g. ``stream.0.blocks.1.k``), those of formats 2 to 4.
As a configuration: causal layers, ALiBi positions for the kinds that offer them, every token's
targets in training (with the state carried across windows for kinds that need it), covariates
normalised by the statistics of the fit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from tsrsa.data.memory import SeriesMemory
from tsrsa.data.windows import consecutive_training_windows, consecutive_validation_windows, training_windows
from tsrsa.estimator.stream_runs import (
    CHUNK_TOKENS, StreamGroup, advance_groups, empty_context, fresh_groups, horizon_term, scaled_values, series_rows,
    statics_of,
)
from tsrsa.estimator.window_state import WindowState, check_range, encoded, horizon_covariates
from tsrsa.nn.streaming import StreamingState

__all__ = ["CHUNK_TOKENS", "StreamGroup", "StreamState"]


@dataclass
class StreamState(WindowState):
    """A streaming model's state: the fixed-window memory plus the recurrent state of every series."""

    groups: list = field(default_factory=list)  # StreamGroups covering every row once
    forecast_steps: np.ndarray | None = None  # (S, h + P - 1, Q) the last completed token's forecast, scaled units
    pending: np.ndarray | None = None  # (S,) steps waiting in a partial patch
    #: (S, D) the last completed token's final vector: the context of its known-future horizon term
    #: (None without known-future covariates; the forecast above is without that term)
    context: np.ndarray | None = None

    # ------------------------------------------------------------------ the configuration
    causal = True
    covariate_norm = "fit"
    streams = True
    one_network = "the streaming configuration (stream=True) carries one network's state from step to step"
    no_start = ("is for the fixed-window network: the streaming configuration has no window for the "
                "statistical forecast to read; use stream=False or start=None")

    @classmethod
    def carries_state(cls, kind) -> bool:
        """Whether training carries the state from window to window: a kind whose state a window from
        the empty state would never have read further than that window."""
        return not kind.streams_across_windows

    @classmethod
    def extra_length(cls, model) -> tuple[int, str]:
        extra = int(model.patch_len) - 1  # the last token forecasts h + patch_len - 1 steps
        return extra, f" + patch_len - 1 = {extra} (each token forecasts h + patch_len - 1 steps)"

    @classmethod
    def training_windows(cls, model, scaled, offsets, fit_lengths):
        """Training windows with every token's targets: inputs (B, L), targets (B, L / P, h + P - 1);
        windows that follow each other in lanes of one series for a kind that carries its state."""
        P, L, H = int(model.patch_len), model.resolved_input_size, int(model.h) + int(model.patch_len) - 1
        if cls.carries_state(model.attention_kind()):
            return consecutive_training_windows(scaled, offsets, fit_lengths, L, H, P, int(model.batch_size))
        return training_windows(scaled, offsets, fit_lengths, L, H, target_stride=P)

    @classmethod
    def validation_windows(cls, model, scaled, offsets, fit_lengths):
        if cls.carries_state(model.attention_kind()):
            return consecutive_validation_windows(scaled, offsets, fit_lengths, model.resolved_input_size,
                                                  int(model.h))
        return super().validation_windows(model, scaled, offsets, fit_lengths)

    @classmethod
    def kind_options(cls, kind, options: dict) -> dict:
        """ALiBi relative positions for a kind that offers them (``alibi``; a learned position would fix
        the token count), unless the options say otherwise."""
        return {"alibi": True, **options} if "alibi" in kind.option_defaults() else options

    @classmethod
    def readout_tokens(cls, model, auto: int | None) -> int | None:
        reach = model.readout_tokens
        return int(reach) if reach not in (None, "auto") else model.resolved_input_size // int(model.patch_len)

    @classmethod
    def short_readout(cls, model, few_windows: bool) -> None:
        """Every token (None), however few the windows: the state keeps the latest token vectors the head reads."""
        return None

    @classmethod
    def patch_lens(cls, model, candidates: list[int]) -> list[int]:
        """Windows of whole tokens: the lengths that divide the input."""
        return [p for p in candidates if model.resolved_input_size % p == 0] or [model.patch_len]

    @classmethod
    def check(cls, model, kind, options: dict) -> None:
        if model.known_future == "tokens":
            raise ValueError("known_future='tokens' puts the horizon's covariates in the sequence of a fixed "
                             "window; the streaming configuration reads them per token: use known_future='readout'")
        if model.causal is False:
            raise ValueError("stream=True reads each series as it arrives, so every layer must be causal; "
                             "leave causal=None (or True)")
        if not kind.recurrent:
            raise ValueError(f"attention kind {kind.kind!r} has no recurrent form, so it cannot stream; "
                             f"use stream=False or a kind with one")
        if model.resolved_covariates.norm == "window":
            raise ValueError("covariates' norm='window' (formerly covariate_norm='window') normalises each window's "
                             "covariates; the streaming configuration reads no windows: use "
                             "covariates=tsrsa.Covariates(norm='fit') (or None)")
        if cls.carries_state(kind) and model.declared_covariates().active:
            raise ValueError(f"attention kind {kind.kind!r} streams after training that carries its state from "
                             f"window to window, which does not read covariates yet; use stream=False with "
                             f"covariates")
        if model.resolved_trainer.batches_per_epoch not in (None, "auto") and cls.carries_state(kind):
            raise ValueError(f"attention kind {kind.kind!r} trains with its state carried through every window of "
                             f"each series in order, so an epoch cannot stop after a few batches; leave "
                             f"the trainer's batches_per_epoch='auto' (or None)")
        if model.resolved_input_size % int(model.patch_len):
            raise ValueError(f"stream=True trains on windows of whole tokens: input_size={model.resolved_input_size} "
                             f"must be a multiple of patch_len={model.patch_len}")

    @classmethod
    def check_layer(cls, layer) -> None:
        """A layer the configuration builds must stream (be causal, with a recurrent form)."""
        layer.check_streamable()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_fit(cls, model, panel, loc, scale, covariates=None) -> "StreamState":
        """The state after fitting: every series' training history streamed once."""
        memory = SeriesMemory.from_panel(panel, model.resolved_input_size, loc, scale, covariates)
        return _streamed(model, panel, memory, covariates)

    def for_frame(self, model, panel) -> "StreamState":
        """The state of ``panel``'s series, each streamed from its first step."""
        base = WindowState.for_frame(self, model, panel)
        return _streamed(model, panel, base, encoded(model, panel))

    def advance(self, model, panel, known: np.ndarray) -> "StreamState":
        """The state after ``update``: the known series' states advanced over their new steps only; new
        series (their whole history in ``panel``) streamed from the start and appended."""
        seen = np.flatnonzero(known >= 0)
        check_range(model, panel.take(seen), self.loc[known[seen]], self.scale[known[seen]],
                    "the statistics the model fitted for it")
        fresh = np.flatnonzero(known < 0)
        new = self.for_frame(model, panel.take(fresh)) if fresh.size else None
        frame = encoded(model, panel)
        memory = self._continued(panel, known, frame if self.covariates is not None else None)
        values = {int(known[j]): scaled_values(panel, int(j), self.loc[known[j]], self.scale[known[j]]) for j in seen}
        rows = series_rows(frame, panel)
        covariates = None if rows is None else {int(known[j]): rows[int(j)] for j in seen}
        groups, last, _ = advance_groups(model, self.groups, values, covariates=covariates, statics=statics_of(self))
        forecast, pending = self.forecast_steps.copy(), self.pending.copy()
        context = None if self.context is None else self.context.copy()
        for row, (y, c) in last.items():
            forecast[row] = y
            if context is not None:
                context[row] = c
        for row, v in values.items():
            pending[row] = (pending[row] + len(v)) % model.network_.patch_len
        out = StreamState(**vars(memory), groups=groups, forecast_steps=forecast, pending=pending, context=context)
        return out if new is None else out.append(new)

    def append(self, other: "StreamState") -> "StreamState":
        """This state followed by ``other``'s series."""
        base = SeriesMemory.append(self, other)
        moved = [StreamGroup(g.rows + self.n_series, g.steps, g.state) for g in other.groups]
        return StreamState(**vars(base), groups=self.groups + moved,
                           forecast_steps=np.concatenate([self.forecast_steps, other.forecast_steps]),
                           pending=np.concatenate([self.pending, other.pending]),
                           context=None if self.context is None else np.concatenate([self.context, other.context]))

    # ------------------------------------------------------------------ forecasting
    def forecast(self, model, h: int, future_df=None) -> dict[str, np.ndarray]:
        """The stored forecasts of the next ``h`` steps, with their known-future term when the model has one."""
        return model.output_columns(self.forecast_outputs(model, h, future_df), self.loc, self.scale)

    def forecast_outputs(self, model, h: int, future_df=None) -> np.ndarray:
        """The head's outputs (S, h, Q) behind ``forecast``, scaled units: the stored forecasts of the ``h``
        steps after each series' last observation, with their known-future term."""
        steps = self.forecast_steps
        future = horizon_covariates(model, self.ids, self.last, h, future_df)  # (S, H, F) or None
        if future is not None and self.context is not None:
            steps = steps + self._future_term(model, future)
        at = self.pending[:, None] + np.arange(h)[None, :]  # (S, h)
        return np.take_along_axis(steps, at[:, :, None], axis=1)  # (S, h, Q) scaled units

    def _future_term(self, model, future: np.ndarray) -> np.ndarray:
        """The known-future term (S, h + P - 1, Q) of the stored forecasts: ``future`` (S, H, F) the values
        of the H steps after each series' last observation; the r steps of a partial patch (after the
        last completed token, already observed) read their values from the state."""
        network, first = model.network_, model.covariates_.future_from
        S, H, F = future.shape
        block = np.zeros((S, network.horizon_out, F), dtype=np.float32)  # the steps after the last token's end
        for i in range(S):
            r = int(self.pending[i])
            if r:
                block[i, :r] = self.covariates[i, -r:, first:]
            block[i, r: r + H] = future[i]
        return horizon_term(model, block, self.context)

    def forecast_at(self, model, panel, cutoffs: np.ndarray, h: int) -> dict[str, np.ndarray]:
        """Forecasts ``{column: (W * S, h)}``, window-major, after positions ``cutoffs`` (S, W) of
        ``panel``'s series, each from the state reached by streaming the series from its first step."""
        check_range(model, panel, self.loc, self.scale, "the statistics of its training part")
        S, W = cutoffs.shape
        network = model.network_
        P, Hp = network.patch_len, network.horizon_out
        values = {j: scaled_values(panel, j, self.loc[j], self.scale[j])[: int(cutoffs[j].max()) + 1] for j in range(S)}
        frame = encoded(model, panel)
        rows = series_rows(frame, panel)
        covariates = None if rows is None else {j: rows[j][: int(cutoffs[j].max()) + 1] for j in range(S)}
        statics = None if frame is None else (frame.static_num, frame.static_cat)
        _, _, tokens = advance_groups(model, fresh_groups(model, S), values, keep_tokens=True, covariates=covariates,
                                statics=statics)
        token = (cutoffs + 1) // P - 1  # (S, W) the last token each cutoff completed
        out = np.stack([tokens[j][0][token[j]] for j in range(S)], axis=1)  # (W, S, Hp, Q)
        if empty_context(network, 1) is not None:  # each token's known-future values: the frame's, after its end
            ends = (panel.offsets[:-1, None] + (token + 1) * P - 1).T.ravel()  # (W * S,) window-major
            future = model.covariates_.future_after(frame.time, ends, np.tile(panel.offsets[1:], W), Hp)
            context = np.stack([tokens[j][1][token[j]] for j in range(S)], axis=1).reshape(W * S, -1)
            out = out + horizon_term(model, future, context).reshape(out.shape)
        at = ((cutoffs + 1) % P).T[:, :, None] + np.arange(h)[None, None, :]  # (W, S, h)
        out = np.take_along_axis(out, at[..., None], axis=2)  # (W, S, h, Q)
        return model.output_columns(out.reshape(W * S, h, -1), np.tile(self.loc, W), np.tile(self.scale, W))

    def kept_history(self, model) -> pd.DataFrame:
        """What each bounded cache keeps: one row per (series, layer, kept token), or per head as well
        where the heads of a layer keep different tokens (``h2o``); ``head`` is missing when shared.
        The series' ids are in the model's ``id_col``."""
        patch_len, freq, frames = int(model.patch_len), model.freq_, []
        for group in self.groups:
            layers = sorted(group.state.kept_positions.items())  # [(layer, (G, H, K) positions)]
            for k, row in enumerate(group.rows):
                for layer, pos in layers:
                    kept = pos[k].numpy()  # (H, K) token positions from the stream's start
                    shared = bool((kept == kept[:1]).all())
                    heads = [pd.NA] if shared else list(range(kept.shape[0]))
                    for head, tokens in zip(heads, kept[:1] if shared else kept):
                        first = tokens * patch_len - (group.steps - 1)  # steps before the last observation
                        n, last = len(tokens), self.last[[row] * len(tokens)]
                        frames.append(pd.DataFrame({
                            model.id_col: self.ids[[row] * n], "layer": layer,
                            "head": pd.array([head] * n, dtype="Int64"), "token": tokens,
                            "start": freq.shift(last, first), "end": freq.shift(last, first + patch_len - 1)}))
        if not frames:
            return WindowState.kept_history(self, model)
        return pd.concat(frames, ignore_index=True)

    # ------------------------------------------------------------------ saving
    def to_files(self) -> tuple[dict, dict]:
        """The fixed-window memory's files plus the streams (complex states as they are)."""
        state, arrays = WindowState.to_files(self)
        flat = [g.state.tensors() for g in self.groups]  # {name: tensor}, the states' own names
        state["stream"] = {"groups": [{"steps": g.steps, "names": sorted(f)} for g, f in zip(self.groups, flat)]}
        arrays["stream.forecast"], arrays["stream.pending"] = self.forecast_steps, self.pending
        if self.context is not None:
            arrays["stream.context"] = self.context
        for i, (group, tensors) in enumerate(zip(self.groups, flat)):
            arrays[f"stream.{i}.rows"] = group.rows
            for name, value in tensors.items():
                arrays[f"stream.{i}.{name}"] = value.numpy()
        return state, arrays

    @classmethod
    def from_files(cls, state: dict, arrays: dict) -> "StreamState":
        memory = WindowState.from_files(state, arrays)

        def network_state(i: int, names: list) -> StreamingState:
            return StreamingState.from_tensors({name: torch.from_numpy(np.array(arrays[f"stream.{i}.{name}"]))
                                                for name in names})

        groups = [StreamGroup(np.asarray(arrays[f"stream.{i}.rows"], dtype=np.int64), int(g["steps"]),
                              network_state(i, g["names"]))
                  for i, g in enumerate(state["stream"]["groups"])]
        return StreamState(**vars(memory), groups=groups, forecast_steps=np.asarray(arrays["stream.forecast"]),
                           pending=np.asarray(arrays["stream.pending"], dtype=np.int64),
                           context=np.asarray(arrays["stream.context"]) if "stream.context" in arrays else None)


# ---------------------------------------------------------------------- running the streams
def _streamed(model, panel, memory: SeriesMemory, covariates) -> StreamState:
    """``memory`` of ``panel``'s series with their states after streaming each whole series."""
    values = {j: scaled_values(panel, j, memory.loc[j], memory.scale[j]) for j in range(panel.n_series)}
    groups, last, _ = advance_groups(model, fresh_groups(model, panel.n_series), values,
                               covariates=series_rows(covariates, panel), statics=statics_of(memory))
    network = model.network_
    forecast = np.full((panel.n_series, network.horizon_out, network.config.n_outputs), np.nan)
    context = empty_context(network, panel.n_series)
    for row, (y, c) in last.items():
        forecast[row] = y
        if context is not None:
            context[row] = c
    return StreamState(**vars(memory), groups=groups, forecast_steps=forecast,
                       pending=panel.lengths.astype(np.int64) % network.patch_len, context=context)
