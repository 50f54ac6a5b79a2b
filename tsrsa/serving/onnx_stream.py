"""The streaming configuration's export: one token's step, its recurrent state as inputs and outputs.

A model fitted with ``stream=True`` keeps, per series, the state of its ``StreamingTransformer``
(:mod:`tsrsa.nn.streaming`): running statistics, the latest token vectors the head reads, each
layer's recurrent state, and the steps of a partial patch. The graph exported here advances that
state by one complete token (``patch_len`` new steps, in the series' scaled units)::

    patch (B, P) float32, state.<name> (B, ...) float32 for every tensor of the state
      -> forecast (B, h + P - 1, Q) float32 (the token's forecast, scaled units), next.<name> (B, ...)

The partial patch waits in numpy (:mod:`tsrsa.serving.served_state`) until it completes. The running
normalisation is exported in its plain recurrent form (``SequentialNorm``: the same statistics as
the FFT convolution ``RunningNorm`` computes for training, without complex numbers).

RSA's REM heads carry complex chains (z advanced by rho = r e^{i theta}); the exported step carries each
as its real and imaginary parts, a trailing axis of 2 (``torch.view_as_real``'s layout), advanced by the
real form of the same recurrence (:mod:`tsrsa.nn.rem_real`, :class:`RealRemLayer`), so that the graph
holds no complex number.

Exported when the state has a fixed size: the ``linear`` kind, and RSA whose softmax branch is a
recurrence too (``attention_options={"t2r_features": k}``), and others whose step torch's exporter can
write. Refused, with the reason: a key/value cache grows with every token (softmax, and RSA's softmax
branch by default), and a bounded one (``cache_size``) until it holds ``cache_size - 1`` tokens, so
neither is one graph input of fixed shape; the delta rule (``fast_weight``) solves a triangular system,
which has no ONNX operator.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from tsrsa.nn.kv_cache import BoundedCacheState
from tsrsa.nn.rem_real import rem_recurrent_real
from tsrsa.nn.rsa import RSAAttention
from tsrsa.nn.rsa_ops import RSAState, gate_mix
from tsrsa.nn.running_norm import RunningNorm
from tsrsa.nn.streaming import StreamingState

__all__ = ["RealRemLayer", "SequentialNorm", "TokenStep", "stream_arrays", "stream_refusal"]

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


def as_real(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor (...) as its real and imaginary parts (..., 2); a real one as it is."""
    return torch.view_as_real(t) if t.is_complex() else t


class RealRemLayer(nn.Module):
    """An RSA layer whose REM state is carried in real pairs (B, H_rem, d_max, hs, 2): its ``stream`` is the
    layer's (``rsa_recurrent``: the branch's recurrent op, then the REM heads, gated) with the REM heads
    advanced by ``rem_recurrent_real`` instead of ``rem_recurrent``; ``init_state`` the layer's, in pairs."""

    def __init__(self, layer: RSAAttention):
        super().__init__()
        self.layer = layer

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> RSAState:
        state = self.layer.init_state(batch_size, device=device, dtype=dtype)
        return RSAState(state.branch, as_real(state.rem))

    def stream(self, x: torch.Tensor, state: RSAState) -> tuple[torch.Tensor, RSAState]:
        layer = self.layer
        layer.check_streamable()
        q, k, v = layer.project(x)  # (B, H, n, hs)
        y, branch = layer.branch_op(recurrent=True)(q, k, v, state=state.branch, output_state=True)
        heads = layer.rem_heads()
        R = heads.codes.numel()
        rem, z = (None, state.rem) if R == 0 else rem_recurrent_real(v[:, :R], heads, state=state.rem)
        return layer.output(gate_mix(y, rem, layer.gate())), RSAState(branch, z)  # (B, n, D)


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
    """A CPU float32 copy of the streaming network, its running norm in the plain form and its RSA layers'
    REM state in real pairs (:class:`RealRemLayer`)."""
    network = copy.deepcopy(model.network_).cpu().float().eval()
    if network.norm is not None:
        network.norm = SequentialNorm.like(network.norm)
    for block in network.blocks:
        if isinstance(block.attn, RSAAttention):
            block.attn = RealRemLayer(block.attn)
    return network


def _empty_state(network: nn.Module, batch_size: int) -> StreamingState:
    """The exportable ``network``'s state of an empty history (its REM chains in pairs), CPU float32."""
    return network.init_state(batch_size, device=torch.device("cpu"), dtype=torch.float32)


def stream_refusal(model) -> str | None:
    """Why the streaming ``model``'s step cannot be exported (the rest of a sentence), or None: a state that
    grows with the tokens (a key/value cache, bounded or not) or holds complex numbers the step does not
    carry in pairs."""
    network = exportable_network(model)
    with torch.no_grad():
        empty = _empty_state(network, 1)
        _, _, later = network.stream_tokens(torch.zeros(1, 2 * network.patch_len), empty)
    before, after = empty.tensors(), later.tensors()
    complex_names = [name for name, t in after.items() if t.is_complex()]
    if complex_names:
        return (f"its state holds complex numbers ({', '.join(complex_names)}), which torch's ONNX exporter does "
                f"not translate")
    grown = [name for name in after if name != PENDING and after[name].shape != before[name].shape]
    if not grown:
        return None
    branches = [layer.branch if isinstance(layer, RSAState) else layer for layer in later.blocks]
    if any(isinstance(branch, BoundedCacheState) for branch in branches):
        return (f"its bounded key/value cache fills token by token up to cache_size - 1 tokens "
                f"({', '.join(grown)}), so it is not one graph input of fixed shape")
    return (f"its state grows with every token ({', '.join(grown)}: a key/value cache), so it is not one "
            f"graph input of fixed shape")


def state_names(model) -> list[str]:
    """The flat names of the network's state tensors that the graph takes and returns (all but the partial
    patch), in order."""
    flat = model.network_.init_state(1, device=torch.device("cpu"), dtype=torch.float32).tensors()
    return [name for name in flat if name != PENDING]


def stream_arrays(model, names: list[str]) -> dict[str, np.ndarray]:
    """What the served model starts from, per series (rows in the model's order): ``state.<name>`` (S, ...),
    the partial patch ``pending_values`` (S, P - 1) and its length ``pending`` (S,), the last completed token's
    forecast ``forecast_steps`` (S, h + P - 1, Q) in scaled units, and ``init.<name>`` (1, ...), the state of
    an empty history (for series that start streaming in the served model). Complex tensors (the REM chains)
    are written as their real and imaginary parts (..., 2), as the graph takes them."""
    memory, network = model.memory_, model.network_
    S, P = len(memory.ids), int(network.patch_len)
    out = {"forecast_steps": np.asarray(memory.forecast_steps, dtype=np.float64),
           "pending": np.asarray(memory.pending, dtype=np.int64),
           "pending_values": np.zeros((S, max(P - 1, 1)), dtype=np.float32)}
    for group in memory.groups:
        flat = {name: as_real(t.detach().cpu()).numpy() for name, t in group.state.tensors().items()}
        for name in names:
            block = out.setdefault(f"state.{name}", np.zeros((S, *flat[name].shape[1:]), dtype=np.float32))
            block[group.rows] = flat[name]
        waiting = flat[PENDING]  # (G, r) the group's partial patch
        out["pending_values"][group.rows, : waiting.shape[1]] = waiting
    empty = network.init_state(1, device=torch.device("cpu"), dtype=torch.float32).tensors()
    out.update({f"init.{name}": as_real(empty[name]).numpy() for name in names})
    return out


def export_step(model, names: list[str], path, export) -> None:
    """The step graph of the streaming ``model`` at ``path`` (``export(module, example, path, dims, inputs,
    outputs)`` runs torch's exporter with the batch dynamic)."""
    network = exportable_network(model)
    step = TokenStep(network, names).eval()
    empty = _empty_state(network, 2).tensors()
    example = (torch.zeros(2, network.patch_len), *[empty[name] for name in names])
    inputs = ["patch", *[f"state.{name}" for name in names]]
    outputs = ["forecast", *[f"next.{name}" for name in names]]
    export(step, example, path, inputs, outputs)
