"""T2R (Kasai et al. 2021, "Finetuning Pretrained Transformers into RNNs"): the attention kind ``t2r``.

Softmax's exp(q·k / √d) is replaced by a dot product of small learned features,

    φ(x) = relu(W_φ x + b_φ),   W_φ ∈ R^{k×d}, b_φ ∈ R^k, one pair per head, shared by its queries and keys,

with the queries scaled by d^(-1/2) before φ, as softmax scales their dot products. Per head:

    non-causal:  y = φ(Q)(φ(K)ᵀV) / max(φ(Q)(φ(K)ᵀ1), c)
    causal:      S_t = S_{t-1} + φ(k_t) v_tᵀ,   z_t = z_{t-1} + φ(k_t),
                 y_t = S_tᵀ φ(q_t) / max(z_tᵀ φ(q_t), c)

With ALiBi (``alibi=True``), the distance bias a softmax original adds to its logits,
exp(q·k / √d − m_h |t − s|), carries over as a weight λ_h^|t − s| on each key, λ_h = exp(−m_h), m_h
ALiBi's slope of head h. Causal, the state decays by λ_h per token:

    S_t = λ_h S_{t-1} + φ(k_t) v_tᵀ,   z_t = λ_h z_{t-1} + φ(k_t),
    y_t = S_tᵀ φ(q_t) / max(z_tᵀ φ(q_t), c)
        = Σ_{s<=t} λ_h^(t−s) φ(q_t)·φ(k_s) v_s / max(Σ_{s<=t} λ_h^(t−s) φ(q_t)·φ(k_s), c),

so a converted streaming model keeps its relative positions (Kasai et al. convert models without
position biases; this is our extension). The state keeps its size. Non-causal, the same weights
are summed forward and backward, still in linear time.

relu features can all be zero, so the denominator has a floor c (``FLOOR`` = 1e-2, the value of
the reference implementation) instead of linear attention's + ε: a query whose features vanish
reads zero. The causal form is an RNN with state (S, z) (a ``LinearState``): k·(d + 1) numbers
per head whatever the history. The forms are those of ``tsrsa.nn.linear_attention`` with the floor,
each ``(q, k, v, feature_map, ..., state=None) -> (output, final state)``: ``t2r_chunked`` (the
chunked form, for training and streaming) and ``t2r_loop`` (the recurrence token by token, the
reference); ``t2r_bidirectional`` is the non-causal form (no state).

The point of the kind is conversion: a trained softmax model keeps every weight, gains W_φ and
b_φ, and is finetuned (``tsrsa.convert.to_recurrent``). W_φ and b_φ start as a torch linear
layer does, uniform in ±1/√d.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.attention import KindOps, register_attention
from tsrsa.nn.linear_attention import (
    LinearState, accumulation_dtype, causal_linear_attention, check_chunk_size, decayed_linear_attention,
    linear_attention, linear_attention_loop,
)
from tsrsa.nn.multihead import MultiHeadAttention
from tsrsa.nn.softmax import register_alibi

__all__ = ["DEFAULT_FEATURE_SIZE", "FLOOR", "T2RAttention", "T2RFeatureMap", "check_feature_size", "t2r_bidirectional",
           "t2r_chunked", "t2r_loop", "t2r_stream"]

FLOOR = 1e-2  # c, the denominator's floor
DEFAULT_FEATURE_SIZE = 32


def check_feature_size(feature_size, name: str = "feature_size") -> None:
    if isinstance(feature_size, bool) or not isinstance(feature_size, int) or feature_size < 1:
        raise ValueError(f"{name}={feature_size!r} must be an int >= 1 (the T2R features per head, e.g. 32)")


def check_floor(floor) -> None:
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not math.isfinite(floor) or floor <= 0:
        raise ValueError(f"floor={floor!r} must be a number > 0 (the denominator's floor; default {FLOOR})")


def _log_decay(slopes: torch.Tensor | None) -> torch.Tensor | None:
    """log λ_h = −m_h: ALiBi's slopes as the state's per-token decay (None: no decay)."""
    return None if slopes is None else -slopes


class T2RFeatureMap(nn.Module):
    """φ(x) = relu(W_φ x + b_φ) per head: x (B, H, T, d) -> (B, H, T, k)."""

    def __init__(self, n_heads: int, head_size: int, feature_size: int):
        super().__init__()
        check_feature_size(feature_size)
        self.weight = nn.Parameter(torch.empty(n_heads, feature_size, head_size))
        self.bias = nn.Parameter(torch.empty(n_heads, feature_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.weight.size(-1))
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    @property
    def feature_size(self) -> int:
        return self.weight.size(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, b = self.weight.to(x.dtype), self.bias.to(x.dtype)
        return F.relu(torch.einsum("bhtd,hkd->bhtk", x, w) + b[None, :, None, :])


def t2r_features(q: torch.Tensor, k: torch.Tensor, feature_map: T2RFeatureMap):
    """φ(q / √d), φ(k) in float32 at least: q, k (B, H, T, d) -> (B, H, T, k) each."""
    dtype = accumulation_dtype(q)
    return feature_map(q.to(dtype) / math.sqrt(q.size(-1))), feature_map(k.to(dtype))


def t2r_chunked(q, k, v, feature_map: T2RFeatureMap, *, chunk_size: int = 64, floor: float = FLOOR,
                slopes: torch.Tensor | None = None, state: LinearState | None = None, output_state: bool = True):
    """The causal form in chunks: q, k, v (B, H, T, d) from ``state`` -> (B, H, T, d) (in float32 at
    least) and the ``LinearState`` after; ``slopes`` (H,): ALiBi's, as the state's decay."""
    with torch.autocast(q.device.type, enabled=False):
        phi_q, phi_k = t2r_features(q, k, feature_map)  # (B, H, T, k)
        return causal_linear_attention(phi_q, phi_k, v.to(phi_q.dtype), chunk_size=chunk_size, floor=floor,
                                       log_decay=_log_decay(slopes), state=state, output_state=output_state)


def t2r_loop(q, k, v, feature_map: T2RFeatureMap, *, floor: float = FLOOR, slopes: torch.Tensor | None = None,
             state: LinearState | None = None, output_state: bool = True):
    """The recurrence token by token (the reference of ``t2r_chunked``, same arguments and returns)."""
    with torch.autocast(q.device.type, enabled=False):
        phi_q, phi_k = t2r_features(q, k, feature_map)  # (B, H, T, k)
        return linear_attention_loop(phi_q, phi_k, v.to(phi_q.dtype), floor=floor, log_decay=_log_decay(slopes),
                                     state=state, output_state=output_state)


def t2r_bidirectional(q, k, v, feature_map: T2RFeatureMap, *, chunk_size: int = 64, floor: float = FLOOR,
                      slopes: torch.Tensor | None = None, state: None = None, output_state: bool = True):
    """The non-causal form: every token reads every token (weighted by λ^|t − s| with ``slopes``):
    q, k, v (B, H, T, d) -> (B, H, T, d), and no state (it is no recurrence: ``state`` must be None)."""
    if state is not None:
        raise ValueError("the non-causal T2R form reads every token at once: it continues no state")
    with torch.autocast(q.device.type, enabled=False):
        phi_q, phi_k = t2r_features(q, k, feature_map)
        v = v.to(phi_q.dtype)
        if slopes is not None:
            return decayed_linear_attention(phi_q, phi_k, v, _log_decay(slopes), chunk_size=chunk_size,
                                            floor=floor), None
        return linear_attention(phi_q, phi_k, v, floor=floor), None


def t2r_stream(q, k, v, feature_map: T2RFeatureMap, *, chunk_size: int = 64, floor: float = FLOOR,
               slopes: torch.Tensor | None = None, state: LinearState | None = None, output_state: bool = True):
    """``t2r_chunked`` over n new tokens q, k, v (B, H, n, d) in the state's precision (float32 at
    least), the state returned in its own (None: the empty history, in q's precision)."""
    if state is None:
        B, H, _, d = q.shape
        state = LinearState.empty(B, H, feature_map.feature_size, d, device=q.device, dtype=q.dtype)
    with torch.autocast(q.device.type, enabled=False):
        phi_q, phi_k = t2r_features(q, k, feature_map)
        dtype = accumulation_dtype(phi_q, state.kv)
        y, new = causal_linear_attention(phi_q.to(dtype), phi_k.to(dtype), v.to(dtype), state=state.cast(dtype),
                                         chunk_size=chunk_size, floor=floor, log_decay=_log_decay(slopes))
    return y, (new.cast(state.kv.dtype) if output_state else None)


@register_attention("t2r")
class T2RAttention(MultiHeadAttention):
    """Attention with T2R's learned relu features in place of softmax (see the module docstring).

    A softmax layer's state dict loads into it unchanged (the same projections); only the feature
    maps are new. State per head when streaming: S (k × d) and z (k).

    Parameters
    ----------
    d_model, n_heads : int
        Token width and number of heads.
    dropout : float, default 0.0
        On the output projection (there are no attention weights to drop).
    causal : bool, default False
        The recurrent form: each token reads its own and earlier tokens.
    feature_size : int, default 32
        k, the features per head.
    floor : float, default 1e-2
        c, the denominator's floor.
    chunk_size : int, default 64
        Tokens per chunk of the causal parallel form (the result does not depend on it).
    alibi : bool, default False
        ALiBi's relative positions as a weight λ_h^|t − s| on each key, λ_h = exp(−m_h): causal, a
        decay of the state per token (see the module docstring). The streaming configuration turns
        it on, as it does for softmax, so a converted streaming model keeps its original's positions.
    """

    recurrent = True
    bidirectional = True
    state_type = LinearState
    ops = KindOps(parallel=t2r_chunked, recurrent=t2r_loop)

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False,
                 feature_size: int = DEFAULT_FEATURE_SIZE, floor: float = FLOOR, chunk_size: int = 64,
                 alibi: bool = False):
        super().__init__(d_model, n_heads, dropout=dropout, causal=causal)
        check_feature_size(feature_size)
        check_floor(floor)
        check_chunk_size(chunk_size)
        self.floor, self.chunk_size = float(floor), chunk_size
        register_alibi(self, n_heads, alibi)
        self.feature_map = T2RFeatureMap(n_heads, self.head_size, feature_size)
        self.reset_parameters()

    @classmethod
    def search_space(cls, trial, *, causal: bool = False) -> dict:
        """The number of features per head."""
        return {"feature_size": trial.suggest_categorical("feature_size", [16, 32, 64])}

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self.feature_map.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.parallel(x, output_state=False)[0]  # (B, T, D)

    def parallel(self, x: torch.Tensor, state: LinearState | None = None, *, output_state: bool = True):
        q, k, v = self.project(x)  # (B, H, T, d)
        if not self.causal:
            y, _ = t2r_bidirectional(q, k, v, self.feature_map, chunk_size=self.chunk_size, floor=self.floor,
                                     slopes=self.slopes)
            return self.output(y), None
        y, state = t2r_chunked(q, k, v, self.feature_map, chunk_size=self.chunk_size, floor=self.floor,
                               slopes=self.slopes, state=state, output_state=output_state)
        return self.output(y), state  # (B, T, D)

    # ------------------------------------------------------------------ recurrent form
    def state_size(self, n_tokens: int) -> int:
        return self.n_heads * self.feature_map.feature_size * (self.head_size + 1)  # S and z per head

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> LinearState:
        device = device if device is not None else self.qkv.weight.device
        return LinearState.empty(batch_size, self.n_heads, self.feature_map.feature_size, self.head_size,
                                 device=device, dtype=dtype or self.qkv.weight.dtype)

    def stream(self, x: torch.Tensor, state: LinearState) -> tuple[torch.Tensor, LinearState]:
        self.check_streamable()
        q, k, v = self.project(x)  # (B, H, n, d)
        y, state = t2r_stream(q, k, v, self.feature_map, chunk_size=self.chunk_size, floor=self.floor,
                              slopes=self.slopes, state=state)
        return self.output(y), state


def __getattr__(name: str):
    from tsrsa.nn.deprecated import resolve

    def parallel(q, k, v, feature_map, *, causal: bool, **options):
        form = t2r_chunked if causal else t2r_bidirectional
        return form(q, k, v, feature_map, output_state=False, **options)[0]

    return resolve(__name__, name, {"t2r_parallel": ("t2r_chunked (causal) or t2r_bidirectional", lambda: parallel)},
                   {"t2r_empty_state": "the state is a LinearState: tsrsa.nn.linear_attention.LinearState.empty(...)"})
