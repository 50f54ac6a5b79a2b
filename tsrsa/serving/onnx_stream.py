"""The streaming configuration's export: one token's step, its recurrent state as inputs and outputs.

A model fitted with ``stream=True`` keeps, per series, the state of its ``StreamingTransformer``
(:mod:`tsrsa.nn.streaming`): running statistics, the latest token vectors the head reads, each
layer's recurrent state, and the steps of a partial patch. The graph exported here advances that
state by one complete token (``patch_len`` new steps, in the series' scaled units)::

    patch (B, P) float32, state.<name> (B, ...) for every tensor of the state (float32; int64 for a bounded
      cache's positions and count; an unbounded cache (B, H, T, hs) with T dynamic) -> forecast
      (B, h + P - 1, Q) float32 (the token's forecast, scaled units), next.<name> (B, ...) (an unbounded
      cache one token longer, (B, H, T + 1, hs))

The partial patch waits in numpy (:mod:`tsrsa.serving.served_state`) until it completes. The running
normalisation is exported in its plain recurrent form (``SequentialNorm``: the same statistics as
the FFT convolution ``RunningNorm`` computes for training, without complex numbers). Each attention
layer is exported as its twin of :mod:`tsrsa.serving.onnx_layers`, the same step in a graph's terms:

- RSA's REM heads carry complex chains (z advanced by rho = r e^{i theta}); the graph carries each as its
  real and imaginary parts, a trailing axis of 2 (``torch.view_as_real``'s layout), advanced by the real
  form of the same recurrence (:mod:`tsrsa.nn.rem_real`, :class:`RealRemLayer`);
- a bounded key/value cache (``cache_size``, every policy, in softmax attention and RSA's softmax branch)
  is held in ``cache_size - 1`` fixed slots from the first token on (:mod:`tsrsa.nn.padded_cache`), the
  number filled following from the tokens streamed; the model's smaller cache of a short history is
  zero-padded into them;
- the delta rule (``fast_weight``) advances token by token, without the chunked form's triangular solve;
- an unbounded key/value cache (softmax, and RSA's softmax branch, by default: ``KeyValueState``, every
  past key and value and nothing else, the order of the tokens being their positions) runs the layer's own
  step: the new token's key and value joined to the cache, its query attending over all of it. The cache
  is an input whose token axis is dynamic (one ``torch.export.Dim`` shared by every layer's cache), and
  its output is one token longer; the lengths of one call are equal, so the served model runs the series
  of each length together (:class:`~tsrsa.serving.served_state.ServedStreams`).

Exported: every kind whose state has a fixed size (``linear``, ``fast_weight``, RSA with
``t2r_features``, softmax and RSA with a bounded cache) and the unbounded caches. Refused, with the reason:
a state that grows otherwise, or holds complex numbers not carried in pairs (no built-in kind).
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from tsrsa.nn.kv_cache import KeyValueState
from tsrsa.nn.rsa_ops import RSAState
from tsrsa.nn.running_norm import RunningNorm
from tsrsa.nn.streaming import StreamingState
from tsrsa.serving.onnx_layers import RealRemLayer, as_real, exportable_layer

__all__ = ["RealRemLayer", "SequentialNorm", "TokenStep", "growing_axes", "stream_arrays", "stream_refusal"]

#: the state tensor that stays in numpy (the partial patch)
PENDING = "pending"


class SequentialNorm(RunningNorm):
    """``RunningNorm`` whose running statistics are computed by their recurrence, step by step:
    m_t = (1 - a) m_{t-1} + a x_t, q_t = (1 - a) q_{t-1} + a x_t² (what the FFT convolution computes)."""

    @classmethod
    def like(cls, norm: RunningNorm) -> "SequentialNorm":
        """A copy of ``norm`` (its parameters and settings) with this class's statistics."""
        twin = cls.__new__(cls)
        twin.__dict__.update(copy.deepcopy(norm).__dict__)
        return twin

    def statistics(self, x: torch.Tensor, m0: torch.Tensor, q0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        keep, a = 1.0 - self.alpha, self.alpha
        m, q, means, squares = m0, q0, [], []
        for t in range(x.size(1)):  # (B,) each step
            m = keep * m + a * x[:, t]
            q = keep * q + a * x[:, t] * x[:, t]
            means.append(m)
            squares.append(q)
        return torch.stack(means, dim=1), torch.stack(squares, dim=1)  # (B, T) each


class TokenStep(nn.Module):
    """A streaming network's step over one complete token: ``forward(patch, *state)`` with the state's
    tensors in the order of ``names`` -> (the token's forecast (B, h + P - 1, Q), *the state after)."""

    def __init__(self, network: nn.Module, names: list[str]):
        super().__init__()
        self.network, self.names = network, list(names)

    def forward(self, patch: torch.Tensor, *state: torch.Tensor):
        tensors = {PENDING: patch[:, :0], **dict(zip(self.names, state))}  # no partial patch inside
        y, _, after = self.network.stream_tokens(patch, StreamingState.from_tensors(tensors))
        flat = after.tensors()
        return (y[:, -1], *[flat[name] for name in self.names])  # (B, h + P - 1, Q), state


def exportable_network(model) -> nn.Module:
    """A CPU float32 copy of the streaming network, its running norm in the plain form and each attention layer
    replaced by its exportable twin (:func:`~tsrsa.serving.onnx_layers.exportable_layer`: REM chains in real
    pairs, bounded caches in fixed slots, the delta rule token by token; an unbounded cache's layer as it is)."""
    network = copy.deepcopy(model.network_).cpu().float().eval()
    if network.norm is not None:
        network.norm = SequentialNorm.like(network.norm)
    for block in network.blocks:
        block.attn = exportable_layer(block.attn)
    return network


def _empty_state(network: nn.Module, batch_size: int) -> StreamingState:
    """The exportable ``network``'s state of an empty history (its REM chains in pairs, its bounded caches in
    empty slots), CPU float32."""
    return network.init_state(batch_size, device=torch.device("cpu"), dtype=torch.float32)


def _grown(network: nn.Module) -> tuple[dict, dict, dict]:
    """The exportable ``network``'s state before and after two tokens ({name: tensor} each, batch 1), and the
    tensors whose shape changed: {name: the axes that grew}."""
    with torch.no_grad():
        empty = _empty_state(network, 1)
        _, _, later = network.stream_tokens(torch.zeros(1, 2 * network.patch_len), empty)
    before, after = empty.tensors(), later.tensors()
    grown = {name: [axis for axis, (a, b) in enumerate(zip(before[name].shape, after[name].shape)) if a != b]
             for name in after if name != PENDING and after[name].shape != before[name].shape}
    return before, after, grown


def _unbounded_caches(network: nn.Module) -> set[str]:
    """The flat names of the network's unbounded key/value caches (``KeyValueState``, softmax attention's or
    RSA's softmax branch's with ``cache_size=None``): ``blocks.<i>.k`` and ``blocks.<i>.v``."""
    names = set()
    for i, layer in enumerate(_empty_state(network, 1).blocks):
        branch = layer.branch if isinstance(layer, RSAState) else layer
        if type(branch) is KeyValueState:  # a bounded cache (a subclass) is held in slots
            names.update(f"blocks.{i}.{name}" for name in branch.tensors())
    return names


def growing_axes(model) -> dict[str, int]:
    """{name: axis} of the state tensors that grow by one token per step (the unbounded key/value caches:
    (B, H, T, hs), axis 2): the graph takes them with a dynamic length and returns them one token longer."""
    network = exportable_network(model)
    _, _, grown = _grown(network)
    return {name: axes[0] for name, axes in grown.items() if len(axes) == 1 and name in _unbounded_caches(network)}


def stream_refusal(model) -> str | None:
    """Why the streaming ``model``'s step cannot be exported (the rest of a sentence), or None: a state that
    grows with the tokens other than by an unbounded key/value cache's token axis, or complex numbers the step
    does not carry in pairs."""
    network = exportable_network(model)
    _, after, grown = _grown(network)
    complex_names = [name for name, t in after.items() if t.is_complex()]
    if complex_names:
        return (f"its state holds complex numbers ({', '.join(complex_names)}), which torch's ONNX exporter does "
                f"not translate")
    caches = _unbounded_caches(network)
    other = [name for name, axes in grown.items() if name not in caches or len(axes) != 1]
    if not other:
        return None
    return (f"its state grows with every token in a way other than a key/value cache's token axis "
            f"({', '.join(other)}), so it is not one graph input of a fixed or growing length")


def state_names(model) -> list[str]:
    """The flat names of the network's state tensors that the graph takes and returns (all but the partial
    patch), in order."""
    flat = model.network_.init_state(1, device=torch.device("cpu"), dtype=torch.float32).tensors()
    return [name for name in flat if name != PENDING]


def _laid_out(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A state tensor of the model (G, ...) in the graph's layout of ``like`` (1, ...): complex parts already
    split; a bounded cache of n tokens zero-padded to its fixed slots; the graph's dtype."""
    pad = [(0, 0)] + [(0, want - have) for have, want in zip(values.shape[1:], like.shape[1:])]
    if len(values.shape) != len(like.shape) or any(after < 0 for _, after in pad):
        raise ValueError(f"a state tensor of shape {values.shape[1:]} does not fit the graph's {like.shape[1:]}")
    return np.pad(values, pad).astype(like.dtype, copy=False)


def stream_arrays(model, names: list[str], growing: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """What the served model starts from, per series (rows in the model's order): ``state.<name>`` (S, ...),
    the partial patch ``pending_values`` (S, P - 1) and its length ``pending`` (S,), the last completed token's
    forecast ``forecast_steps`` (S, h + P - 1, Q) in scaled units, and ``init.<name>`` (1, ...), the state of
    an empty history (for series that start streaming in the served model). Each state tensor is laid out
    as the graph takes it: complex tensors (the REM chains) as their real and imaginary parts (..., 2), a
    bounded cache in its ``cache_size - 1`` slots (positions and counts int64, the rest float32).

    ``growing`` ({name: axis}, :func:`growing_axes`): the unbounded caches, whose lengths differ by series:
    ``state.<name>`` holds the rows' caches without their batch axis, one after another along the token axis
    (``axis - 1``: (H, T_0 + T_1 + ..., hs)), and ``tokens`` (S,) int64 each row's length."""
    growing = growing or {}
    memory = model.memory_
    network = exportable_network(model)
    S, P = len(memory.ids), int(network.patch_len)
    empty = {name: as_real(t).numpy() for name, t in _empty_state(network, 1).tensors().items()}
    out = {"forecast_steps": np.asarray(memory.forecast_steps, dtype=np.float64),
           "pending": np.asarray(memory.pending, dtype=np.int64),
           "pending_values": np.zeros((S, max(P - 1, 1)), dtype=np.float32)}
    out.update({f"state.{name}": np.zeros((S, *empty[name].shape[1:]), dtype=empty[name].dtype) for name in names
                if name not in growing})
    caches = {name: [None] * S for name in growing}  # each row's (H, T, hs)
    tokens = np.zeros(S, dtype=np.int64)
    for group in memory.groups:
        flat = {name: as_real(t.detach().cpu()).numpy() for name, t in group.state.tensors().items()}
        for name in names:
            if name in growing:
                for i, row in enumerate(group.rows):
                    caches[name][row] = flat[name][i].astype(empty[name].dtype, copy=False)
                    tokens[row] = flat[name].shape[growing[name]]
            else:
                out[f"state.{name}"][group.rows] = _laid_out(flat[name], empty[name])
        waiting = flat[PENDING]  # (G, r) the group's partial patch
        out["pending_values"][group.rows, : waiting.shape[1]] = waiting
    for name, axis in growing.items():
        rows = [empty[name][0] if c is None else c for c in caches[name]]
        out[f"state.{name}"] = np.concatenate(rows, axis=axis - 1) if rows else empty[name][0]
    if growing:
        out["tokens"] = tokens
    out.update({f"init.{name}": empty[name] for name in names})
    return out


def export_step(model, names: list[str], path, export, growing: dict[str, int] | None = None) -> None:
    """The step graph of the streaming ``model`` at ``path`` (``export(module, example, path, inputs, outputs,
    tokens)`` runs torch's exporter with the batch dynamic, and the length of input i dynamic along axis
    ``tokens[i]``). ``growing`` ({name: axis}): the unbounded caches, given to the example three tokens long."""
    growing = growing or {}
    network = exportable_network(model)
    step = TokenStep(network, names).eval()
    empty = _empty_state(network, 2).tensors()
    state = []
    for name in names:
        t = empty[name]
        if name in growing:  # a cache of 3 tokens: a length that is neither 0 nor 1, so none is specialised on
            shape = list(t.shape)
            shape[growing[name]] = 3
            t = torch.zeros(shape, dtype=t.dtype)
        state.append(t)
    example = (torch.zeros(2, network.patch_len), *state)
    inputs = ["patch", *[f"state.{name}" for name in names]]
    outputs = ["forecast", *[f"next.{name}" for name in names]]
    tokens = {1 + i: growing[name] for i, name in enumerate(names) if name in growing}
    export(step, example, path, inputs, outputs, tokens)
