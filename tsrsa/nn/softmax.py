"""Multi-head softmax self-attention (Vaswani et al. 2017), the vanilla attention kind.

Its recurrent form is a key/value cache: a causal softmax transformer is an RNN whose state is
every past key and value of every layer (Oren et al. 2024), so the state grows by one token per
step and ``stream`` costs O(tokens seen) per new token.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.kv_cache import CacheSpec, bounded_attend, empty_bounded_cache
from tsrsa.nn.multihead import MultiHeadAttention
from tsrsa.nn.registry import register_attention

__all__ = ["KeyValueCache", "SoftmaxAttention", "alibi_slopes", "cached_softmax_attention", "position_bias",
           "softmax_attention", "softmax_branch"]


def softmax_attention(q, k, v, *, causal: bool = False, dropout: float = 0.0, training: bool = False):
    """softmax(q kᵀ / √d) v, the explicit four lines (reference for the fused kernel).

    q, k, v: (B, H, T, hs) -> (B, H, T, hs)
    """
    T = q.size(-2)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (B, H, T, T)
    if causal:
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        att = att.masked_fill(~mask, float("-inf"))
    att = F.dropout(F.softmax(att, dim=-1), p=dropout, training=training)
    return att @ v  # (B, H, T, hs)


def alibi_slopes(n_heads: int) -> list[float]:
    """ALiBi's head slopes (Press et al. 2022): a geometric sequence starting at 2^(-8 / n) for n a
    power of two; otherwise those of the nearest lower power of two, then every other slope of the
    next power of two."""

    def geometric(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(n_heads).is_integer():
        return geometric(n_heads)
    lower = 2 ** math.floor(math.log2(n_heads))
    return geometric(lower) + geometric(2 * lower)[0::2][: n_heads - lower]


def position_bias(n: int, T: int, slopes: torch.Tensor | None, *, causal: bool, device=None):
    """The attention mask of n queries, the last n of T positions, over all T keys.

    Without ``slopes``: a boolean causal mask (n, T) (or None when not causal). With ``slopes`` (H,):
    ALiBi's additive bias -slope_h * distance (H, n, T), -inf on keys after the query when causal
    (distance = query - key; |query - key| when not causal): a relative position, any length.
    """
    distance = (T - n + torch.arange(n, device=device))[:, None] - torch.arange(T, device=device)[None, :]  # (n, T)
    if slopes is None:
        return distance >= 0 if causal else None
    bias = -slopes.view(-1, 1, 1) * distance.abs().to(slopes.dtype)  # (H, n, T)
    return bias.masked_fill(distance < 0, float("-inf")) if causal else bias


def cached_softmax_attention(q, k, v, slopes: torch.Tensor | None = None):
    """Causal attention of the last n tokens over all T (cached and new) keys.

    q (B, H, n, hs); k, v (B, H, T, hs) with T >= n, the queries being tokens T - n .. T - 1.
    Returns (B, H, n, hs), equal to rows T - n .. T - 1 of causal softmax attention over T tokens
    (with ALiBi's bias when ``slopes`` are given).
    """
    mask = position_bias(q.size(-2), k.size(-2), slopes, causal=True, device=q.device)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype) if slopes is not None else mask)


class KeyValueCache:
    """The recurrent state of softmax attention: every past key and value, (B, H, T, hs) each.

    Kinds with a softmax branch keep their cache under ``"k"`` and ``"v"`` of their state.
    """

    @staticmethod
    def empty(batch_size: int, n_heads: int, head_size: int, *, device=None, dtype=None,
              spec: CacheSpec | None = None) -> dict:
        if spec is not None and spec.bounded:
            return empty_bounded_cache(batch_size, n_heads, head_size, device=device, dtype=dtype)
        shape = (batch_size, n_heads, 0, head_size)
        return {"k": torch.zeros(shape, device=device, dtype=dtype), "v": torch.zeros(shape, device=device, dtype=dtype)}

    @staticmethod
    def attend(q, k, v, state: dict, slopes: torch.Tensor | None = None,
               spec: CacheSpec | None = None) -> tuple[torch.Tensor, dict]:
        """Append the new keys/values to the cache and attend: q, k, v (B, H, n, hs) of n new tokens
        (a bounded ``spec``: ``tsrsa.nn.kv_cache.bounded_attend``, one token at a time)."""
        if spec is not None and spec.bounded:
            return bounded_attend(q, k, v, state, slopes, size=spec.size, policy=spec.policy, sinks=spec.sinks)
        keys = torch.cat([state["k"], k], dim=2)  # (B, H, T, hs)
        values = torch.cat([state["v"], v], dim=2)
        return cached_softmax_attention(q, keys, values, slopes), {"k": keys, "v": values}


def softmax_branch(q, k, v, slopes: torch.Tensor | None, *, causal: bool, dropout: float) -> torch.Tensor:
    """Parallel softmax attention (B, H, T, hs), with ALiBi's bias when ``slopes`` are given."""
    if slopes is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal)
    T = q.size(-2)
    bias = position_bias(T, T, slopes, causal=causal, device=q.device).to(q.dtype)  # (H, T, T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout)


def register_alibi(module: nn.Module, n_heads: int, alibi: bool) -> None:
    """Give ``module`` the buffer ``slopes`` (H,), or None without ALiBi (not saved: it is fixed)."""
    slopes = torch.tensor(alibi_slopes(n_heads)) if alibi else None
    module.register_buffer("slopes", slopes, persistent=False)


@register_attention("softmax")
class SoftmaxAttention(MultiHeadAttention):
    """Scaled dot-product attention over all heads, with the fused kernel when available.

    Parameters
    ----------
    d_model : int
        Width of the token vectors; a multiple of ``n_heads``.
    n_heads : int
        Number of heads.
    dropout : float, default 0.0
        Dropout on the attention weights and on the output projection.
    causal : bool, default False
        Mask keys after the query (a token sees only itself and earlier tokens).
    alibi : bool, default False
        Relative positions: ALiBi's head-wise linear bias on the attention logits (Press et al. 2022),
        for any number of tokens, as streaming needs (no learned position fixes the token count).
    cache_size, cache_policy, cache_sinks : int or None, str, int; default None, "window", 4
        Streaming only: keep at most ``cache_size`` keys and values (None: every one), dropping by
        ``cache_policy`` ("window", "sinks", "h2o", "tova"; see ``tsrsa.nn.kv_cache``).
    """

    recurrent = True

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False,
                 alibi: bool = False, cache_size: int | None = None, cache_policy: str = "window",
                 cache_sinks: int = 4):
        super().__init__(d_model, n_heads, dropout=dropout, causal=causal)
        self.cache = CacheSpec(cache_size, cache_policy, cache_sinks)
        self.fused = hasattr(F, "scaled_dot_product_attention")
        register_alibi(self, n_heads, alibi)
        self.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.project(x)  # (B, H, T, hs)
        p = self.attention_dropout
        if self.fused or self.slopes is not None:
            y = softmax_branch(q, k, v, self.slopes, causal=self.causal, dropout=p)
        else:
            y = softmax_attention(q, k, v, causal=self.causal, dropout=p, training=self.training)
        return self.output(y)  # (B, T, D)

    # ------------------------------------------------------------------ recurrent form
    def state_size(self, n_tokens: int) -> int:
        return self.cache.state_size(n_tokens, self.d_model, self.n_heads)

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> dict:
        device = device if device is not None else self.qkv.weight.device
        return KeyValueCache.empty(batch_size, self.n_heads, self.head_size, device=device,
                                   dtype=dtype or self.qkv.weight.dtype, spec=self.cache)

    def stream(self, x: torch.Tensor, state: dict) -> tuple[torch.Tensor, dict]:
        self.check_streamable()
        q, k, v = self.project(x)  # (B, H, n, hs)
        y, state = KeyValueCache.attend(q, k, v, state, self.slopes, self.cache)  # (B, H, n, hs)
        return self.output(y), state
