"""The streaming configuration of the transformer forecasters: every series' recurrent state.

A forecaster with ``stream=True`` keeps, per series, the state its network
(``tsrsa.nn.StreamingTransformer``) reached over the whole history it has seen, and the forecast
of the last token that history completed (a token is ``patch_len`` steps, counted from the first
step of the series):

- ``fit`` streams every series' training history once training ends;
- ``predict()`` reads the stored forecasts. A token forecasts the ``h + patch_len - 1`` steps
  after its end; with ``r`` steps waiting in a partial patch, the ``h`` steps after the last
  observation are that forecast's steps ``r + 1 .. r + h``. A partial patch changes nothing until
  it completes;
- ``update(df)`` streams the new steps only: O(new steps) for recurrent state (a softmax
  kind's key/value cache grows by one entry per token);
- ``predict(df=...)`` and cross-validation without refit stream each series of the frame given
  from its first step, so they score the predictor that ``update`` serves.

Series that have streamed the same number of steps share one batched state (a ``StreamGroup``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from tsrsa.data.memory import SeriesMemory
from tsrsa.data.windows import consecutive_training_windows, training_windows
from tsrsa.nn.covariates import CovariateBatch
from tsrsa.training import torch_threads

#: tokens per call of the network's ``stream``: bounds the work and memory of one call
CHUNK_TOKENS = 256


@dataclass
class StreamGroup:
    """Series that have streamed the same number of steps, and their stacked network state."""

    rows: np.ndarray  # (G,) positions of these series in the memory
    steps: int  # observations each has streamed
    state: dict  # the network's state, batch dimension G, on the CPU


@dataclass
class StreamMemory(SeriesMemory):
    """A fitted streaming forecaster's memory: the fixed-window memory plus the state of every series."""

    groups: list = field(default_factory=list)  # StreamGroups covering every row once
    forecast: np.ndarray | None = None  # (S, h + P - 1, Q) the last completed token's forecast, scaled units
    pending: np.ndarray | None = None  # (S,) steps waiting in a partial patch
    #: (S, D) the last completed token's final vector: the context of its known-future horizon term
    #: (None without known-future covariates; the forecast above is without that term)
    context: np.ndarray | None = None

    def append(self, other: "StreamMemory") -> "StreamMemory":
        base = SeriesMemory.append(self, other)
        moved = [StreamGroup(g.rows + self.n_series, g.steps, g.state) for g in other.groups]
        return StreamMemory(**vars(base), groups=self.groups + moved,
                            forecast=np.concatenate([self.forecast, other.forecast]),
                            pending=np.concatenate([self.pending, other.pending]),
                            context=None if self.context is None else np.concatenate([self.context, other.context]))


def token_training_windows(estimator, scaled, offsets, fit_lengths):
    """Training windows with every token's targets: inputs (B, L), targets (B, L / P, h + P - 1)."""
    P = int(estimator.patch_len)
    return training_windows(scaled, offsets, fit_lengths, estimator._input_size, int(estimator.h) + P - 1,
                            target_stride=P)


def consecutive_token_windows(estimator, scaled, offsets, fit_lengths):
    """Training windows with every token's targets that follow each other in lanes of one series
    (``tsrsa.data.ConsecutiveWindows``), for a kind trained with its state carried across windows."""
    P = int(estimator.patch_len)
    return consecutive_training_windows(scaled, offsets, fit_lengths, estimator._input_size,
                                        int(estimator.h) + P - 1, P, int(estimator.batch_size))


# ---------------------------------------------------------------------- running the streams
def _select(state: dict, index: torch.Tensor) -> dict:
    return {name: value[index] for name, value in state.items()}


def _concat(states: list[dict]) -> dict:
    return {name: torch.cat([s[name] for s in states]) for name in states[0]}


@torch.no_grad()
def _advance(estimator, groups: list[StreamGroup], values: dict, *, keep_tokens: bool = False,
             covariates: dict | None = None, statics: tuple | None = None):
    """Stream ``values[row]`` (new steps in scaled units) through each row's state, with
    ``covariates[row]`` (the encoded covariates of those steps, (n, C)) and ``statics`` (static
    values and codes, indexed by row) for a model with covariates.

    Returns the groups after, ``last`` {row: ((h + P - 1, Q), (D,))} (the last completed token's
    forecast and final vector, for rows whose new steps completed a token) and, with ``keep_tokens``,
    ``tokens`` {row: ((n_tokens, h + P - 1, Q), (n_tokens, D))} (every completed token's, in order).
    """
    network = estimator.network_.eval()
    device = next(network.parameters()).device
    chunk = CHUNK_TOKENS * network.patch_len
    batch = int(estimator.inference_batch_size)
    buckets: dict[int, list] = {}
    last, tokens = {}, {}
    with torch_threads(estimator.num_threads):
        for group in groups:
            counts = np.array([len(values.get(int(r), ())) for r in group.rows], dtype=np.int64)
            for n in np.unique(counts):
                where = np.flatnonzero(counts == n)
                for a in range(0, len(where), batch):
                    part = where[a: a + batch]
                    rows = group.rows[part]
                    state = {k: v.to(device) for k, v in _select(group.state, torch.as_tensor(part)).items()}
                    if n:
                        x = torch.from_numpy(np.stack([values[int(r)] for r in rows]).astype(np.float32)).to(device)
                        cov = _covariate_rows(covariates, statics, rows, device)
                        outputs, contexts = [], []
                        for start in range(0, int(n), chunk):
                            part_cov = None if cov is None else cov._replace(
                                past=None if cov.past is None else cov.past[:, start: start + chunk])
                            y, context, state = network.stream_tokens(x[:, start: start + chunk], state, part_cov)
                            if y.size(1):  # (b, c, H', Q), (b, c, D)
                                outputs.append(y.double().cpu().numpy())
                                contexts.append(context.float().cpu().numpy())
                        if outputs:
                            for k, row in enumerate(rows):
                                last[int(row)] = (outputs[-1][k, -1], contexts[-1][k, -1])
                                if keep_tokens:
                                    tokens[int(row)] = (np.concatenate([o[k] for o in outputs]),
                                                        np.concatenate([c[k] for c in contexts]))
                    buckets.setdefault(group.steps + int(n), []).append((rows, {k: v.cpu() for k, v in state.items()}))
    merged = [StreamGroup(np.concatenate([rows for rows, _ in parts]), steps, _concat([s for _, s in parts]))
              for steps, parts in sorted(buckets.items())]
    return merged, last, tokens


def _covariate_rows(covariates: dict | None, statics: tuple | None, rows, device) -> CovariateBatch | None:
    """The covariates of the given rows as the network's ``stream`` reads them (None without)."""
    if covariates is None and statics is None:
        return None

    def tensor(array, dtype=np.float32):
        if array is None or array.shape[-1] == 0:
            return None
        return torch.from_numpy(np.ascontiguousarray(array, dtype=dtype)).to(device)

    past = None if covariates is None else np.stack([covariates[int(r)] for r in rows])  # (b, n, C)
    num, cat = statics if statics is not None else (None, None)
    return CovariateBatch(None, tensor(past), None, None if num is None else tensor(num[rows]),
                          None if cat is None else tensor(cat[rows], np.int64))


def _encoded_rows(estimator, panel, encoded=None) -> dict | None:
    """{series of ``panel``: its encoded covariates (n, C)} (from ``encoded``, the panel's encoding,
    when the caller has it); None for a model without covariates."""
    encoded = estimator._encoded(panel) if encoded is None else encoded
    if encoded is None or encoded.time.shape[1] == 0:
        return None
    return {j: encoded.time[panel.offsets[j]: panel.offsets[j + 1]] for j in range(panel.n_series)}


def _statics(memory: SeriesMemory) -> tuple | None:
    return None if memory.static_num is None else (memory.static_num, memory.static_cat)


def _scaled(panel, j: int, loc: float, scale: float) -> np.ndarray:
    return ((panel.series(j) - loc) / scale).astype(np.float32)


def _fresh_groups(estimator, n_series: int) -> list[StreamGroup]:
    state = estimator.network_.init_state(n_series, device=torch.device("cpu"), dtype=torch.float32)
    return [StreamGroup(np.arange(n_series), 0, state)]


def streamed_memory(estimator, panel, memory: SeriesMemory) -> StreamMemory:
    """``memory`` of ``panel``'s series with their states after streaming each whole series."""
    values = {j: _scaled(panel, j, memory.loc[j], memory.scale[j]) for j in range(panel.n_series)}
    groups, last, _ = _advance(estimator, _fresh_groups(estimator, panel.n_series), values,
                               covariates=_encoded_rows(estimator, panel), statics=_statics(memory))
    network = estimator.network_
    forecast = np.full((panel.n_series, network.horizon_out, network.config.n_outputs), np.nan)
    context = _empty_context(network, panel.n_series)
    for row, (y, c) in last.items():
        forecast[row] = y
        if context is not None:
            context[row] = c
    return StreamMemory(**vars(memory), groups=groups, forecast=forecast,
                        pending=panel.lengths.astype(np.int64) % network.patch_len, context=context)


def _empty_context(network, n_series: int) -> np.ndarray | None:
    if network.covariates is None or network.covariates.horizon is None:
        return None
    return np.zeros((n_series, network.config.d_model), dtype=np.float32)


def continued_streams(estimator, memory: SeriesMemory, panel, known: np.ndarray) -> StreamMemory:
    """``memory`` (the known series continued) with their states advanced over ``panel``'s new steps."""
    old = estimator.memory_
    seen = np.flatnonzero(known >= 0)
    values = {int(known[j]): _scaled(panel, int(j), old.loc[known[j]], old.scale[known[j]]) for j in seen}
    rows = _encoded_rows(estimator, panel)
    covariates = None if rows is None else {int(known[j]): rows[int(j)] for j in seen}
    groups, last, _ = _advance(estimator, old.groups, values, covariates=covariates, statics=_statics(old))
    forecast, pending = old.forecast.copy(), old.pending.copy()
    context = None if old.context is None else old.context.copy()
    for row, (y, c) in last.items():
        forecast[row] = y
        if context is not None:
            context[row] = c
    for row, v in values.items():
        pending[row] = (pending[row] + len(v)) % estimator.network_.patch_len
    return StreamMemory(**vars(memory), groups=groups, forecast=forecast, pending=pending, context=context)


def stored_forecast(memory: StreamMemory, h: int, forecast: np.ndarray | None = None) -> np.ndarray:
    """The forecasts (S, h, Q) in the data's units after every series' last observation (from
    ``forecast``, (S, h + P - 1, Q) in scaled units, when given; else the stored one)."""
    forecast = memory.forecast if forecast is None else forecast
    steps = memory.pending[:, None] + np.arange(h)[None, :]  # (S, h)
    y = np.take_along_axis(forecast, steps[:, :, None], axis=1)  # (S, h, Q) scaled units
    return y * memory.scale[:, None, None] + memory.loc[:, None, None]


@torch.no_grad()
def _horizon_term(estimator, future: np.ndarray, context: np.ndarray) -> np.ndarray:
    """The network's known-future term (n, h + P - 1, Q), scaled units, of ``future`` (n, h + P - 1, F)
    after tokens whose final vectors are ``context`` (n, D)."""
    network = estimator.network_.eval()
    device = next(network.parameters()).device
    with torch_threads(estimator.num_threads):
        term = network.horizon_term(torch.from_numpy(np.ascontiguousarray(future, dtype=np.float32)).to(device),
                                    torch.from_numpy(np.ascontiguousarray(context, dtype=np.float32)).to(device))
    return term.double().cpu().numpy()


def forecast_with_future(estimator, memory: StreamMemory, future: np.ndarray) -> np.ndarray:
    """The stored forecast (S, h + P - 1, Q) with its known-future term: ``future`` (S, H, F) the
    values of the H steps after each series' last observation; the r steps of a partial patch (after
    the last completed token, already observed) read their values from the memory."""
    encoder, network = estimator.covariates_, estimator.network_
    S, H, F = future.shape
    block = np.zeros((S, network.horizon_out, F), dtype=np.float32)  # the steps after the last token's end
    first = encoder.n_time - encoder.n_future
    for i in range(S):
        r = int(memory.pending[i])
        if r:
            block[i, :r] = memory.covariates[i, -r:, first:]
        block[i, r: r + H] = future[i]
    return memory.forecast + _horizon_term(estimator, block, memory.context)


def forecast_at_cutoffs(estimator, panel, cutoffs: np.ndarray, h: int) -> np.ndarray:
    """Forecasts (W * S, h, Q), window-major, after positions ``cutoffs`` (S, W) of ``panel``'s series,
    each from the state reached by streaming the series from its first step."""
    memory = estimator.memory_
    S, W = cutoffs.shape
    network = estimator.network_
    P, Hp = network.patch_len, network.horizon_out
    values = {j: _scaled(panel, j, memory.loc[j], memory.scale[j])[: int(cutoffs[j].max()) + 1] for j in range(S)}
    encoded = estimator._encoded(panel)
    rows = _encoded_rows(estimator, panel, encoded)
    covariates = None if rows is None else {j: rows[j][: int(cutoffs[j].max()) + 1] for j in range(S)}
    statics = None if encoded is None else (encoded.static_num, encoded.static_cat)
    _, _, tokens = _advance(estimator, _fresh_groups(estimator, S), values, keep_tokens=True,
                            covariates=covariates, statics=statics)
    out = np.empty((W, S, Hp, network.config.n_outputs))
    with_future = _empty_context(network, 1) is not None
    if with_future:  # each token's known-future values: the frame's, after the token's end
        encoder = estimator.covariates_
        first = encoder.n_time - encoder.n_future
        future = np.zeros((W, S, Hp, encoder.n_future), dtype=np.float32)
        context = np.zeros((W, S, network.config.d_model), dtype=np.float32)
    starts = np.empty((W, S), dtype=np.int64)
    for j in range(S):
        seen = cutoffs[j] + 1  # (W,) observations up to each cutoff
        token, r = seen // P - 1, seen % P
        starts[:, j] = r
        for w in range(W):
            out[w, j] = tokens[j][0][token[w]]
            if with_future:
                after = (token[w] + 1) * P + np.arange(Hp)  # positions after the token's end
                inside = after < panel.lengths[j]
                future[w, j, inside] = encoded.time[panel.offsets[j] + after[inside], first:]
                context[w, j] = tokens[j][1][token[w]]
    if with_future:
        out = out + _horizon_term(estimator, future.reshape(W * S, Hp, -1),
                                  context.reshape(W * S, -1)).reshape(out.shape)
    steps = starts[:, :, None] + np.arange(h)[None, None, :]  # (W, S, h)
    out = np.take_along_axis(out, steps[..., None], axis=2)  # (W, S, h, Q)
    out = out * memory.scale[None, :, None, None] + memory.loc[None, :, None, None]
    return out.reshape(W * S, h, -1)


# ---------------------------------------------------------------------- saving
def save_streams(memory: StreamMemory, state: dict, arrays: dict) -> None:
    """Add the streams to a saved model's JSON state and arrays (complex states as they are)."""
    state["stream"] = {"groups": [{"steps": g.steps, "names": sorted(g.state)} for g in memory.groups]}
    arrays["stream.forecast"], arrays["stream.pending"] = memory.forecast, memory.pending
    if memory.context is not None:
        arrays["stream.context"] = memory.context
    for i, group in enumerate(memory.groups):
        arrays[f"stream.{i}.rows"] = group.rows
        for name, value in group.state.items():
            arrays[f"stream.{i}.{name}"] = value.numpy()


def load_streams(memory: SeriesMemory, state: dict, arrays: dict) -> StreamMemory:
    groups = [StreamGroup(np.asarray(arrays[f"stream.{i}.rows"], dtype=np.int64), int(g["steps"]),
                          {name: torch.from_numpy(np.array(arrays[f"stream.{i}.{name}"])) for name in g["names"]})
              for i, g in enumerate(state["stream"]["groups"])]
    return StreamMemory(**vars(memory), groups=groups, forecast=np.asarray(arrays["stream.forecast"]),
                        pending=np.asarray(arrays["stream.pending"], dtype=np.int64),
                        context=np.asarray(arrays["stream.context"]) if "stream.context" in arrays else None)


def kept_history(memory: StreamMemory, freq, patch_len: int, id_col: str = "unique_id") -> pd.DataFrame:
    """What each bounded cache keeps: one row per (series, layer, kept token), or per head as well
    where the heads of a layer keep different tokens (``h2o``); ``head`` is missing when shared. The
    series' ids are in the column ``id_col``."""
    frames = []
    for group in memory.groups:
        layers = sorted((int(name.split(".")[1]), value) for name, value in group.state.items()
                        if name.startswith("blocks.") and name.endswith(".pos"))
        for k, row in enumerate(group.rows):
            for layer, pos in layers:
                kept = pos[k].numpy()  # (H, K) token positions from the stream's start
                shared = bool((kept == kept[:1]).all())
                heads = [pd.NA] if shared else list(range(kept.shape[0]))
                for head, tokens in zip(heads, kept[:1] if shared else kept):
                    first = tokens * patch_len - (group.steps - 1)  # steps before the last observation
                    n = len(tokens)
                    frames.append(pd.DataFrame({
                        id_col: memory.ids[[row] * n], "layer": layer, "head": pd.array([head] * n, dtype="Int64"),
                        "token": tokens, "start": freq.shift(memory.last[[row] * n], first),
                        "end": freq.shift(memory.last[[row] * n], first + patch_len - 1)}))
    columns = [id_col, "layer", "head", "token", "start", "end"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
