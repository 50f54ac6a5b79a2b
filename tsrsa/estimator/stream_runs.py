"""Running the streams of a streaming forecaster: every series' network state advanced over new steps.

Series that have streamed the same number of steps share one batched network state (a
:class:`StreamGroup`, its state a :class:`~tsrsa.nn.streaming.StreamingState`); ``advance_groups``
streams new steps through the groups in bounded batches and regroups the series by the steps they
have streamed. The states are cut, moved and joined by their own methods (``select``, ``to``,
``StreamingState.concat``); nothing here reads their names. :class:`~tsrsa.estimator.stream_state.StreamState`
holds the groups and answers ``update``, ``predict`` and cross-validation with them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tsrsa.data.memory import SeriesMemory
from tsrsa.nn.covariates import CovariateBatch
from tsrsa.nn.streaming import StreamingState
from tsrsa.training import torch_threads

__all__ = ["CHUNK_TOKENS", "StreamGroup", "advance_groups", "covariate_rows", "empty_context", "fresh_groups",
           "horizon_term", "scaled_values", "series_rows", "statics_of"]

#: tokens per call of the network's ``stream``: bounds the work and memory of one call
CHUNK_TOKENS = 256


@dataclass
class StreamGroup:
    """Series that have streamed the same number of steps, and their stacked network state."""

    rows: np.ndarray  # (G,) positions of these series in the state
    steps: int  # observations each has streamed
    state: StreamingState  # the network's state, batch dimension G, on the CPU


@torch.no_grad()
def advance_groups(model, groups: list[StreamGroup], values: dict, *, keep_tokens: bool = False,
                   covariates: dict | None = None, statics: tuple | None = None):
    """Stream ``values[row]`` (new steps in scaled units) through each row's state, with
    ``covariates[row]`` (the encoded covariates of those steps, (n, C)) and ``statics`` (static
    values and codes, indexed by row) for a model with covariates.

    Returns the groups after, ``last`` {row: ((h + P - 1, Q), (D,))} (the last completed token's
    forecast and final vector, for rows whose new steps completed a token) and, with ``keep_tokens``,
    ``tokens`` {row: ((n_tokens, h + P - 1, Q), (n_tokens, D))} (every completed token's, in order).
    """
    network = model.network_.eval()
    device = next(network.parameters()).device
    chunk = CHUNK_TOKENS * network.patch_len
    batch = int(model.resolved_trainer.inference_batch_size)
    buckets: dict[int, list] = {}
    last, tokens = {}, {}
    with torch_threads(model.resolved_trainer.num_threads):
        for group in groups:
            counts = np.array([len(values.get(int(r), ())) for r in group.rows], dtype=np.int64)
            for n in np.unique(counts):
                where = np.flatnonzero(counts == n)
                for a in range(0, len(where), batch):
                    part = where[a: a + batch]
                    rows = group.rows[part]
                    state = group.state.select(torch.as_tensor(part)).to(device)
                    if n:
                        x = torch.from_numpy(np.stack([values[int(r)] for r in rows]).astype(np.float32)).to(device)
                        cov = covariate_rows(covariates, statics, rows, device)
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
                    buckets.setdefault(group.steps + int(n), []).append((rows, state.to("cpu")))
    merged = [StreamGroup(np.concatenate([rows for rows, _ in parts]), steps,
                          StreamingState.concat([s for _, s in parts]))
              for steps, parts in sorted(buckets.items())]
    return merged, last, tokens


def covariate_rows(covariates: dict | None, statics: tuple | None, rows, device) -> CovariateBatch | None:
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


def series_rows(frame, panel) -> dict | None:
    """{series of ``panel``: its encoded covariates (n, C)} from ``frame`` (the panel's encoding);
    None without time-varying covariates."""
    if frame is None or frame.time.shape[1] == 0:
        return None
    return {j: frame.time[panel.offsets[j]: panel.offsets[j + 1]] for j in range(panel.n_series)}


def statics_of(memory: SeriesMemory) -> tuple | None:
    """The static values and codes of a memory's series (None without)."""
    return None if memory.static_num is None else (memory.static_num, memory.static_cat)


def scaled_values(panel, j: int, loc: float, scale: float) -> np.ndarray:
    """Series ``j`` of ``panel`` in scaled units, float32."""
    return ((panel.series(j) - loc) / scale).astype(np.float32)


def fresh_groups(model, n_series: int) -> list[StreamGroup]:
    """One group of ``n_series`` series that have streamed nothing."""
    state = model.network_.init_state(n_series, device=torch.device("cpu"), dtype=torch.float32)
    return [StreamGroup(np.arange(n_series), 0, state)]


def empty_context(network, n_series: int) -> np.ndarray | None:
    """Zero final vectors (n_series, D) for a network with known-future covariates; None otherwise."""
    if network.covariates is None or network.covariates.horizon is None:
        return None
    return np.zeros((n_series, network.config.d_model), dtype=np.float32)


@torch.no_grad()
def horizon_term(model, future: np.ndarray, context: np.ndarray) -> np.ndarray:
    """The network's known-future term (n, h + P - 1, Q), scaled units, of ``future`` (n, h + P - 1, F)
    after tokens whose final vectors are ``context`` (n, D)."""
    network = model.network_.eval()
    device = next(network.parameters()).device
    with torch_threads(model.resolved_trainer.num_threads):
        term = network.horizon_term(torch.from_numpy(np.ascontiguousarray(future, dtype=np.float32)).to(device),
                                    torch.from_numpy(np.ascontiguousarray(context, dtype=np.float32)).to(device))
    return term.double().cpu().numpy()
