"""Exportable twins of the streaming layers: the same step, in operators and shapes an ONNX graph holds.

Each wraps a fitted layer (its weights shared, nothing copied or changed) and has the two methods a
streaming block calls, ``init_state(batch_size, device=, dtype=)`` and ``stream(x, state) -> (y, state)``,
computing what the layer's ``stream`` computes from the same state, laid out for a graph:

- :class:`SlottedCacheLayer`: softmax attention with a bounded cache, the cache in ``cache_size - 1``
  fixed slots (:mod:`tsrsa.nn.padded_cache`) instead of a cache that grows up to that size;
- :class:`RealRemLayer`: an RSA layer, its REM chains in real pairs (:mod:`tsrsa.nn.rem_real`) and a
  bounded softmax branch in fixed slots;
- :class:`DeltaRuleLayer`: fast-weight attention with the delta rule, advanced token by token
  (``delta_rule_loop``) instead of by the chunked WY form, whose triangular solve
  (``torch.linalg.solve_triangular``) has no ONNX operator. Over one token the two are the same update,
  S' = S + β φ(k) (v − Sᵀφ(k))ᵀ, in a different order of operations.

:func:`exportable_layer` picks the twin of a layer (the layer itself where its own step exports).
"""
from __future__ import annotations

from functools import partial

import torch
from torch import nn

from tsrsa.nn.fast_weight import FastWeightAttention, FastWeightState, delta_rule_loop
from tsrsa.nn.linear_attention import accumulation_dtype
from tsrsa.nn.padded_cache import empty_slots, slotted_attend
from tsrsa.nn.rem_real import rem_recurrent_real
from tsrsa.nn.rsa import RSAAttention
from tsrsa.nn.rsa_ops import RSAState, gate_mix
from tsrsa.nn.softmax import SoftmaxAttention

__all__ = ["DeltaRuleLayer", "RealRemLayer", "SlottedCacheLayer", "as_real", "exportable_layer"]


def as_real(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor (...) as its real and imaginary parts (..., 2); a real one as it is."""
    return torch.view_as_real(t) if t.is_complex() else t


def _slotted_op(layer: nn.Module):
    """The layer's bounded softmax cache as ``slotted_attend``, its options bound: (q, k, v, state=, output_state=)."""
    cache = layer.cache
    return partial(slotted_attend, size=cache.size, policy=cache.policy, sinks=cache.sinks, slopes=layer.slopes)


class SlottedCacheLayer(nn.Module):
    """Softmax attention whose bounded cache is held in ``cache_size - 1`` fixed slots (``slotted_attend``):
    ``stream`` is the layer's (project, attend over the cache, output) with ``bounded_attend`` in slots."""

    def __init__(self, layer: SoftmaxAttention):
        super().__init__()
        self.layer = layer

    def init_state(self, batch_size: int, *, device=None, dtype=None):
        layer = self.layer
        return empty_slots(batch_size, layer.n_heads, layer.head_size, layer.cache.size, device=device,
                           dtype=dtype or layer.qkv.weight.dtype)

    def stream(self, x: torch.Tensor, state):
        layer = self.layer
        layer.check_streamable()
        q, k, v = layer.project(x)  # (B, H, n, hs)
        y, state = _slotted_op(layer)(q, k, v, state=state)  # (B, H, n, hs)
        return layer.output(y), state  # (B, n, D)


class RealRemLayer(nn.Module):
    """An RSA layer whose REM state is carried in real pairs (B, H_rem, d_max, hs, 2): its ``stream`` is the
    layer's (``rsa_recurrent``: the branch's recurrent op, then the REM heads, gated) with the REM heads
    advanced by ``rem_recurrent_real`` instead of ``rem_recurrent``, and a bounded softmax branch in fixed
    slots (``slotted_attend``); ``init_state`` the layer's, in that layout."""

    def __init__(self, layer: RSAAttention):
        super().__init__()
        self.layer = layer

    @property
    def slotted(self) -> bool:
        """Whether the branch is a bounded softmax cache (held in slots here)."""
        return self.layer.features is None and self.layer.cache.bounded

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> RSAState:
        layer = self.layer
        state = layer.init_state(batch_size, device=device, dtype=dtype)
        branch = state.branch
        if self.slotted:
            branch = empty_slots(batch_size, layer.n_heads, layer.head_size, layer.cache.size,
                                 device=state.rem.device, dtype=dtype or layer.qkv.weight.dtype)
        return RSAState(branch, as_real(state.rem))

    def stream(self, x: torch.Tensor, state: RSAState) -> tuple[torch.Tensor, RSAState]:
        layer = self.layer
        layer.check_streamable()
        q, k, v = layer.project(x)  # (B, H, n, hs)
        op = _slotted_op(layer) if self.slotted else layer.branch_op(recurrent=True)
        y, branch = op(q, k, v, state=state.branch, output_state=True)
        heads = layer.rem_heads()
        R = heads.codes.numel()
        rem, z = (None, state.rem) if R == 0 else rem_recurrent_real(v[:, :R], heads, state=state.rem)
        return layer.output(gate_mix(y, rem, layer.gate())), RSAState(branch, z)  # (B, n, D)


class DeltaRuleLayer(nn.Module):
    """Fast-weight attention whose delta rule advances token by token (``delta_rule_loop``, the recurrence
    the chunked form folds; module docstring); the sum rule's chunked form has no solve and runs as the
    layer's."""

    def __init__(self, layer: FastWeightAttention):
        super().__init__()
        self.layer = layer

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> FastWeightState:
        return self.layer.init_state(batch_size, device=device, dtype=dtype)

    def stream(self, x: torch.Tensor, state: FastWeightState) -> tuple[torch.Tensor, FastWeightState]:
        layer = self.layer
        if layer.update != "delta":
            return layer.stream(x, state)
        layer.check_streamable()
        dtype = accumulation_dtype(x, state.fast_weight)
        phi_q, phi_k, v, beta, _ = layer.features(x, dtype)  # (B, H, n, d_φ), (B, H, n, d), (B, H, n)
        y, new = delta_rule_loop(phi_q, phi_k, v, beta, state=state.cast(dtype))  # (B, H, n, d)
        return layer.output(y), new.cast(state.fast_weight.dtype)


def exportable_layer(layer: nn.Module) -> nn.Module:
    """The twin of a streaming block's attention layer whose step an ONNX graph holds, or the layer itself
    (linear attention, the sum rule, an unbounded softmax cache: their own steps export, the cache with a
    dynamic token axis)."""
    if isinstance(layer, RSAAttention):
        return RealRemLayer(layer)
    if isinstance(layer, SoftmaxAttention) and layer.cache.bounded:
        return SlottedCacheLayer(layer)
    if isinstance(layer, FastWeightAttention) and layer.update == "delta":
        return DeltaRuleLayer(layer)
    return layer
