"""What a served model holds of its series, and how it advances and forecasts: numpy and a session only.

As a fitted model's ``memory_`` (:mod:`tsrsa.estimator.window_state`, :mod:`tsrsa.estimator.stream_state`),
one class per configuration, each a value (a call returns a new one):

- :class:`ServedWindows`: each series' last ``input_size`` values and scaling; the graph forecasts from
  them (``ScaledForecast`` of :mod:`tsrsa.serving.onnx_export`);
- :class:`ServedStreams`: each series' recurrent state, its partial patch and the last completed token's
  forecast; the graph advances the state one token at a time (``TokenStep`` of
  :mod:`tsrsa.serving.onnx_stream`).

Each has ``forecast(h)`` (S, h, Q) in the data's units, ``for_frame(panel, scaler)`` (the state of another
frame's series: ``predict(df=...)``), ``advance(panel, known)`` (``update``), and ``append``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tsrsa.data.memory import SeriesMemory

__all__ = ["ServedStreams", "ServedWindows"]


def _continued_memory(memory: SeriesMemory, panel, known: np.ndarray) -> SeriesMemory:
    """``memory`` with its known series continued by ``panel``'s values (tails slid, last timestamps moved)."""
    T = memory.tails.shape[1]
    tails, last = memory.tails.copy(), memory.last
    seen = np.flatnonzero(known >= 0)
    for j in seen:
        i = int(known[j])
        tails[i] = np.concatenate([tails[i], panel.series(int(j))])[-T:]
    if seen.size:
        moved = pd.Series(last)
        moved.iloc[known[seen]] = pd.Index(panel.last).take(seen)
        last = pd.Index(moved)
    return SeriesMemory(ids=memory.ids, last=last, tails=tails, loc=memory.loc, scale=memory.scale)


@dataclass
class ServedWindows:
    """A fixed-window model's served state: per series its last values and scaling (``memory``); ``run(feeds,
    outputs)`` runs the graph (a session's ``run`` with the output names first)."""

    memory: SeriesMemory
    run: object

    def forecast(self, h: int) -> np.ndarray:
        """(S, h, Q) in the data's units, quantile levels in order."""
        m = self.memory
        feeds = {name: np.ascontiguousarray(a, dtype=np.float64) for name, a in
                 (("tails", m.tails), ("loc", m.loc), ("scale", m.scale))}
        return self.run(feeds, ["forecast"])[0][:, :h]

    def for_frame(self, panel, scaler) -> "ServedWindows":
        return replace(self, memory=self.memory.for_new_data(panel, self.memory.tails.shape[1], scaler))

    def advance(self, panel, known: np.ndarray) -> "ServedWindows":
        return replace(self, memory=_continued_memory(self.memory, panel, known))

    def append(self, other: "ServedWindows") -> "ServedWindows":
        return replace(self, memory=SeriesMemory.append(self.memory, other.memory))


@dataclass
class ServedStreams:
    """A streaming model's served state (module docstring). Arrays per series, rows in ``memory``'s order."""

    memory: SeriesMemory
    run: object
    patch_len: int
    names: list  # the state tensors' names, in the graph's order
    states: dict  # name -> (S, ...) float32
    pending: np.ndarray  # (S,) steps waiting in a partial patch
    pending_values: np.ndarray  # (S, max(P - 1, 1)) float32, scaled units, the first ``pending`` of each row
    forecast_steps: np.ndarray  # (S, h + P - 1, Q) float64, scaled units: the last completed token's forecast
    empty: dict = field(default_factory=dict)  # name -> (1, ...) the state of an empty history

    def forecast(self, h: int) -> np.ndarray:
        """The stored forecasts of the ``h`` steps after each series' last observation: a token forecasts the
        ``h + P - 1`` steps after its end, and ``r`` observed steps of a partial patch skip its first ``r``."""
        at = self.pending[:, None] + np.arange(h)[None, :]  # (S, h)
        y = np.take_along_axis(self.forecast_steps, at[:, :, None], axis=1)  # (S, h, Q) scaled units
        y = np.sort(y, axis=-1)  # quantile levels in order (a point forecast has one)
        return y * self.memory.scale[:, None, None] + self.memory.loc[:, None, None]

    def _values(self, panel, rows: np.ndarray, memory: SeriesMemory) -> dict[int, np.ndarray]:
        """{row: series j of ``panel`` in the scaled units of ``memory``'s row, float32} for j, row in pairs."""
        return {int(row): ((panel.series(int(j)) - memory.loc[row]) / memory.scale[row]).astype(np.float32)
                for j, row in enumerate(rows) if row >= 0}

    def for_frame(self, panel, scaler) -> "ServedStreams":
        """``panel``'s series streamed from an empty state (known ids scaled by their fitted statistics)."""
        memory = self.memory.for_new_data(panel, self.memory.tails.shape[1], scaler)
        S = panel.n_series
        fresh = replace(self, memory=memory, pending=np.zeros(S, dtype=np.int64),
                        states={n: np.repeat(self.empty[n], S, axis=0) for n in self.names},
                        pending_values=np.zeros((S, self.pending_values.shape[1]), dtype=np.float32),
                        forecast_steps=np.full((S, *self.forecast_steps.shape[1:]), np.nan))
        return fresh._streamed(self._values(panel, np.arange(S), memory))

    def advance(self, panel, known: np.ndarray) -> "ServedStreams":
        """The known series of ``panel`` advanced over their new steps only (O(new steps))."""
        memory = _continued_memory(self.memory, panel, known)
        return replace(self, memory=memory)._streamed(self._values(panel, known, self.memory))

    def append(self, other: "ServedStreams") -> "ServedStreams":
        return replace(self, memory=SeriesMemory.append(self.memory, other.memory),
                       states={n: np.concatenate([self.states[n], other.states[n]]) for n in self.names},
                       pending=np.concatenate([self.pending, other.pending]),
                       pending_values=np.concatenate([self.pending_values, other.pending_values]),
                       forecast_steps=np.concatenate([self.forecast_steps, other.forecast_steps]))

    def _streamed(self, values: dict[int, np.ndarray]) -> "ServedStreams":
        """This state with ``values[row]`` (new steps, scaled units) streamed through each row's state: the
        partial patch first, then every completed token through the graph, the rows that have a k-th token
        batched together."""
        P = self.patch_len
        states = {n: a.copy() for n, a in self.states.items()}
        pending, waiting, forecast = self.pending.copy(), self.pending_values.copy(), self.forecast_steps.copy()
        tokens = {}
        for row, new in values.items():
            steps = np.concatenate([waiting[row, : pending[row]], new])  # (r + n,)
            c = len(steps) // P
            tokens[row] = steps[: c * P].reshape(c, P)
            pending[row] = len(steps) - c * P
            waiting[row, : pending[row]] = steps[c * P:]
        most = max((len(t) for t in tokens.values()), default=0)
        outputs = ["forecast", *[f"next.{n}" for n in self.names]]
        for k in range(most):
            rows = np.array([row for row, t in tokens.items() if len(t) > k], dtype=np.int64)
            feeds = {"patch": np.stack([tokens[int(row)][k] for row in rows])}  # (b, P)
            feeds.update({f"state.{n}": states[n][rows] for n in self.names})
            y, *after = self.run(feeds, outputs)
            forecast[rows] = y
            for n, a in zip(self.names, after):
                states[n][rows] = a
        return replace(self, states=states, pending=pending, pending_values=waiting, forecast_steps=forecast)
