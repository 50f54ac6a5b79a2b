"""What a served model holds of its series, and how it advances and forecasts: numpy and a session only.

As a fitted model's ``memory_`` (:mod:`tsrsa.estimator.window_state`, :mod:`tsrsa.estimator.stream_state`),
one class per configuration, each a value (a call returns a new one):

- :class:`ServedWindows`: each series' last ``input_size`` values and scaling; the graph forecasts from
  them (``ScaledForecast`` of :mod:`tsrsa.serving.onnx_export`);
- :class:`ServedStreams`: each series' recurrent state, its partial patch and the last completed token's
  forecast; the graph advances the state one token at a time (``TokenStep`` of
  :mod:`tsrsa.serving.onnx_stream`). An unbounded key/value cache is kept per series (its length grows by
  one token per completed patch and differs by series), and each step runs the series of one length together.

Each has ``forecast(h)`` (S, h, Q) in the data's units, ``for_frame(panel, scaler)`` (the state of another
frame's series: ``predict(df=...)``), ``advance(panel, known)`` (``update``), and ``append``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from tsrsa.data.cycles import window_cycle
from tsrsa.data.memory import SeriesMemory

__all__ = ["ServedStreams", "ServedWindows"]


@dataclass
class ServedWindows:
    """A fixed-window model's served state: per series its last values and scaling (``memory``, with the
    encoded covariates of those steps and the statics for a model fitted with covariates); ``run(feeds,
    outputs)`` runs the graph (a session's ``run`` with the output names first); ``output``: the graph's output
    (``forecast``, or a distribution loss's ``parameters``); ``covariates``: the model's
    :class:`~tsrsa.serving.served_covariates.ServedCovariates` (None: it reads none); ``cycle`` and ``freq``: a
    learned cycle's record (period and series) and the time axis its phases are read on (None: no cycle)."""

    memory: SeriesMemory
    run: object
    output: str = "forecast"
    covariates: object = None
    cycle: dict | None = None
    freq: object = None

    def forecast(self, h: int, future: np.ndarray | None = None) -> np.ndarray:
        """(S, h, Q) in the data's units, quantile levels in order; a distribution's parameters (S, h, P) in the
        scaled units. ``future``: the known-future channels (S, H, F) of the horizon (``ServedCovariates.future``)."""
        m = self.memory
        feeds = {name: np.ascontiguousarray(a, dtype=np.float64) for name, a in
                 (("tails", m.tails), ("loc", m.loc), ("scale", m.scale))}
        if self.covariates is not None:
            feeds.update(self.covariates.feeds(m, future))
        if self.cycle is not None:  # each window's row and phase, from the series' ids and last timestamps
            feeds["cycle"] = window_cycle(self.cycle, self.freq, m.ids, m.last, m.tails.shape[1])
        return self.run(feeds, [self.output])[0][:, :h]

    def _encoded(self, panel):
        return None if self.covariates is None else self.covariates.encoded(panel)

    def for_frame(self, panel, scaler) -> "ServedWindows":
        memory = self.memory.for_new_data(panel, self.memory.tails.shape[1], scaler, self._encoded(panel))
        return replace(self, memory=memory)

    def advance(self, panel, known: np.ndarray) -> "ServedWindows":
        rows = self._encoded(panel)
        if rows is not None:
            m = self.memory
            self.covariates.encoder.check_statics_unchanged(panel, rows, known, m.static_num, m.static_cat)
        return replace(self, memory=self.memory.continued(panel, known, rows))

    def append(self, other: "ServedWindows") -> "ServedWindows":
        return replace(self, memory=SeriesMemory.append(self.memory, other.memory))


def _rows_of(states: dict, name: str, rows: np.ndarray, growing: dict) -> np.ndarray:
    """The state tensor ``name`` of ``rows`` as the graph takes it (b, ...): rows of an array, or a growing
    cache's per-row arrays (1, ..., T, ...) joined along the batch (the rows' lengths T are equal)."""
    if name in growing:
        return np.concatenate([states[name][int(row)] for row in rows])
    return states[name][rows]


@dataclass
class ServedStreams:
    """A streaming model's served state (module docstring). Arrays per series, rows in ``memory``'s order.

    ``growing`` {name: axis}: the unbounded key/value caches, which grow by one token per completed patch;
    their lengths differ by series, so ``states[name]`` is a list with one array (1, H, T, hs) per row (not
    copied when a row is unchanged: a step makes new arrays, never writes into one). The graph takes equal
    lengths in one call: each step runs the rows of one length together (``lengths``), which are all rows
    of a frame streamed from the start, and the series that have streamed equally far.
    """

    memory: SeriesMemory
    run: object
    patch_len: int
    names: list  # the state tensors' names, in the graph's order
    states: dict  # name -> (S, ...) float32, or a list of S arrays (1, ..., T, ...) for a growing cache
    pending: np.ndarray  # (S,) steps waiting in a partial patch
    pending_values: np.ndarray  # (S, max(P - 1, 1)) float32, scaled units, the first ``pending`` of each row
    forecast_steps: np.ndarray  # (S, h + P - 1, Q) float64, scaled units: the last completed token's forecast
    empty: dict = field(default_factory=dict)  # name -> (1, ...) the state of an empty history
    growing: dict = field(default_factory=dict)  # name -> the token axis of a growing cache (none: {})

    @property
    def lengths(self) -> np.ndarray:
        """(S,) the tokens each series' growing caches hold (zeros without a growing cache)."""
        if not self.growing:
            return np.zeros(self.memory.n_series, dtype=np.int64)
        name, axis = next(iter(self.growing.items()))
        return np.array([a.shape[axis] for a in self.states[name]], dtype=np.int64)

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

    def _empty_states(self, S: int) -> dict:
        """The states of ``S`` empty histories."""
        return {n: [self.empty[n]] * S if n in self.growing else np.repeat(self.empty[n], S, axis=0)
                for n in self.names}

    def for_frame(self, panel, scaler) -> "ServedStreams":
        """``panel``'s series streamed from an empty state (known ids scaled by their fitted statistics)."""
        memory = self.memory.for_new_data(panel, self.memory.tails.shape[1], scaler)
        S = panel.n_series
        fresh = replace(self, memory=memory, pending=np.zeros(S, dtype=np.int64), states=self._empty_states(S),
                        pending_values=np.zeros((S, self.pending_values.shape[1]), dtype=np.float32),
                        forecast_steps=np.full((S, *self.forecast_steps.shape[1:]), np.nan))
        return fresh._streamed(self._values(panel, np.arange(S), memory))

    def advance(self, panel, known: np.ndarray) -> "ServedStreams":
        """The known series of ``panel`` advanced over their new steps only (O(new steps))."""
        memory = self.memory.continued(panel, known)
        return replace(self, memory=memory)._streamed(self._values(panel, known, self.memory))

    def append(self, other: "ServedStreams") -> "ServedStreams":
        states = {n: (list(self.states[n]) + list(other.states[n]) if n in self.growing
                      else np.concatenate([self.states[n], other.states[n]])) for n in self.names}
        return replace(self, memory=SeriesMemory.append(self.memory, other.memory), states=states,
                       pending=np.concatenate([self.pending, other.pending]),
                       pending_values=np.concatenate([self.pending_values, other.pending_values]),
                       forecast_steps=np.concatenate([self.forecast_steps, other.forecast_steps]))

    def _streamed(self, values: dict[int, np.ndarray]) -> "ServedStreams":
        """This state with ``values[row]`` (new steps, scaled units) streamed through each row's state: the
        partial patch first, then every completed token through the graph, the rows that have a k-th token
        batched together (and, with growing caches, those of one cache length)."""
        P = self.patch_len
        states = {n: list(a) if n in self.growing else a.copy() for n, a in self.states.items()}
        pending, waiting, forecast = self.pending.copy(), self.pending_values.copy(), self.forecast_steps.copy()
        lengths = self.lengths
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
            ready = np.array([row for row, t in tokens.items() if len(t) > k], dtype=np.int64)
            for length in np.unique(lengths[ready]):  # one call per cache length (one call without a cache)
                rows = ready[lengths[ready] == length]
                feeds = {"patch": np.stack([tokens[int(row)][k] for row in rows])}  # (b, P)
                feeds.update({f"state.{n}": _rows_of(states, n, rows, self.growing) for n in self.names})
                y, *after = self.run(feeds, outputs)
                forecast[rows] = y
                for n, a in zip(self.names, after):
                    if n in self.growing:
                        for i, row in enumerate(rows):
                            states[n][int(row)] = a[i:i + 1]
                    else:
                        states[n][rows] = a
            lengths[ready] += 1 if self.growing else 0
        return replace(self, states=states, pending=pending, pending_values=waiting, forecast_steps=forecast)
