"""Bounded key/value caches: softmax attention as an RNN with a state of at most k tokens.

A causal softmax layer that streams keeps every past key and value (Oren et al. 2024: a
multi-state RNN whose state grows by one token per step). Capping the cache at ``size`` tokens
with a rule for which token to drop bounds that state. ``size`` is the most tokens a query attends
to, itself included (so ``window`` at the training context's token count reads exactly that
context): each new token joins the kept ``size - 1``, its query attends to all of them, and then
one token is dropped:

- ``window``: the oldest;
- ``sinks``: the oldest after the first ``sinks`` tokens of the stream, which are always kept
  (StreamingLLM's attention sinks, Xiao et al. 2024). As in StreamingLLM, relative positions are
  counted inside the cache, not in the stream: the kept tokens in their order are positions
  0 .. K - 1 and the query is the last of them, so ALiBi's distance to a sink is its distance in
  the cache (a contiguous bias) and a sink thousands of tokens back still weighs as a neighbour of
  the oldest token of the window;
- ``h2o``: per head, the token with the least attention accumulated over every query since it
  entered, among all but the ``size // 2`` most recent (heavy hitters, Zhang et al. 2023); the
  kept set differs by head;
- ``tova``: the token with the lowest weight in the current query's attention averaged over the
  heads, the newest token included (Oren et al. 2024); one kept set for all heads of a layer.

The states: ``KeyValueState`` (k, v (B, H, T, hs): every past key and value, softmax attention's
recurrent state, Oren et al. 2024) and ``BoundedCacheState``, which holds besides ``k`` and ``v``
(B, H, K, hs): ``pos`` (B, H, K), the stream position of each kept token (for ALiBi's distances
under every policy but ``sinks``, and to say which history is kept), ``score`` (B, H, K), the
attention accumulated by each kept token (read by ``h2o``), and ``seen`` (B,), the tokens streamed.
Bounded caches take new tokens one at a time, an O(size) step each: ``bounded_attend`` is their
recurrent form, with every kind's signature ``(q, k, v, ..., state=None) -> (output, final state)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tsrsa.nn.state import LayerState

__all__ = ["CACHE_POLICIES", "BoundedCacheState", "CacheSpec", "KeyValueState", "bounded_attend"]

CACHE_POLICIES = ("window", "sinks", "h2o", "tova")


@dataclass(frozen=True)
class CacheSpec:
    """How a softmax branch caches while streaming: ``size`` None (every token) or a query attending
    to at most ``size`` tokens, dropping by ``policy`` (``sinks``: the first tokens always kept).
    Checked when made."""

    size: int | None = None
    policy: str = "window"
    sinks: int = 4

    def __post_init__(self):
        _check(self.size, self.policy, self.sinks)

    @property
    def bounded(self) -> bool:
        return self.size is not None

    def tokens(self, n_tokens: int) -> int:
        """Tokens held between steps after ``n_tokens`` streamed."""
        return n_tokens if self.size is None else min(n_tokens, self.size - 1)

    def state_size(self, n_tokens: int, d_model: int, n_heads: int) -> int:
        """Numbers the cache holds after ``n_tokens``: a key and a value per kept token, and (bounded)
        each kept token's position and score per head."""
        kept = self.tokens(n_tokens)
        return 2 * kept * d_model + (2 * kept * n_heads if self.bounded else 0)


def _check(cache_size, cache_policy: str, cache_sinks: int) -> None:
    """A ValueError or TypeError naming a bad cache option."""
    if cache_size is not None and (isinstance(cache_size, bool) or not isinstance(cache_size, int)):
        raise TypeError(f"cache_size must be an int or None (unbounded), got {type(cache_size).__name__}")
    if cache_policy not in CACHE_POLICIES:
        raise ValueError(f"cache_policy must be one of {CACHE_POLICIES}, got {cache_policy!r}")
    if isinstance(cache_sinks, bool) or not isinstance(cache_sinks, int) or cache_sinks < 0:
        raise ValueError(f"cache_sinks must be an int >= 0, got {cache_sinks!r}")
    if cache_size is None:
        return
    least = {"sinks": cache_sinks + 1, "h2o": 2}.get(cache_policy, 1)
    if cache_size < least:
        raise ValueError(f"cache_size must be at least {least} for cache_policy={cache_policy!r}"
                         f"{f' with cache_sinks={cache_sinks}' if cache_policy == 'sinks' else ''}, got {cache_size}")


@dataclass(frozen=True, eq=False)
class KeyValueState(LayerState):
    """A softmax branch's cache of every past key and value."""

    k: torch.Tensor  # (B, H, T, hs)
    v: torch.Tensor  # (B, H, T, hs)

    @classmethod
    def empty(cls, batch_size: int, n_heads: int, head_size: int, *, device=None, dtype=None) -> "KeyValueState":
        shape = (batch_size, n_heads, 0, head_size)
        return cls(torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))


@dataclass(frozen=True, eq=False)
class BoundedCacheState(KeyValueState):
    """A cache of at most ``size - 1`` tokens between steps, with what its policies read."""

    pos: torch.Tensor  # (B, H, K) stream position of each kept token
    score: torch.Tensor  # (B, H, K) attention accumulated by each kept token
    seen: torch.Tensor  # (B,) tokens streamed

    @classmethod
    def empty(cls, batch_size: int, n_heads: int, head_size: int, *, device=None, dtype=None) -> "BoundedCacheState":
        kv = (batch_size, n_heads, 0, head_size)
        return cls(torch.zeros(kv, device=device, dtype=dtype), torch.zeros(kv, device=device, dtype=dtype),
                   torch.zeros(batch_size, n_heads, 0, device=device, dtype=torch.long),
                   torch.zeros(batch_size, n_heads, 0, device=device, dtype=dtype),
                   torch.zeros(batch_size, device=device, dtype=torch.long))

    @property
    def kept_positions(self) -> torch.Tensor:
        return self.pos

    def without(self, drop: torch.Tensor) -> "BoundedCacheState":
        """The cache without token ``drop`` (B, H) of each (sequence, head), the others in order."""
        K = self.pos.size(-1)
        index = torch.arange(K, device=drop.device)
        keep = (index != drop[..., None]).nonzero()[:, -1].view(*drop.shape, K - 1)  # (B, H, K - 1)
        k, v = (t.gather(2, keep[..., None].expand(-1, -1, -1, t.size(-1))) for t in (self.k, self.v))
        return BoundedCacheState(k, v, self.pos.gather(2, keep), self.score.gather(2, keep), self.seen)


def _victim(state: BoundedCacheState, weights: torch.Tensor, size: int, policy: str, sinks: int) -> torch.Tensor:
    """Which token (B, H) to drop from a cache of ``size`` tokens; weights (B, H, size)."""
    pos = state.pos
    inf = torch.iinfo(pos.dtype).max
    if policy == "window":
        return pos.argmin(-1)
    if policy == "sinks":
        return pos.masked_fill(pos < sinks, inf).argmin(-1)
    if policy == "h2o":
        recent = pos >= pos.amax(-1, keepdim=True) - (size // 2) + 1  # the most recent size // 2 tokens
        return state.score.masked_fill(recent, float("inf")).argmin(-1)
    shared = weights.mean(1).argmin(-1)  # tova: (B,), the heads' mean weight
    return shared[:, None].expand(-1, pos.size(1))


def bounded_attend(q, k, v, *, size: int, policy: str, sinks: int = 4, slopes: torch.Tensor | None = None,
                   state: BoundedCacheState | None = None, output_state: bool = True):
    """The recurrent form of a bounded cache: n new tokens (q, k, v: (B, H, n, hs)) one at a time, each
    over at most ``size`` tokens, from ``state`` (None: the empty history).

    Each new token joins the cache, its query attends to every kept token (ALiBi's bias when
    ``slopes`` (H,) are given: by the distance in the stream, under ``sinks`` by the distance in the
    cache), the weights add to each token's accumulated score, and a cache of ``size`` drops the
    token the policy names. Returns (B, H, n, hs) and the state after the n tokens.
    """
    B, H, n, hs = q.shape
    if state is None:
        state = BoundedCacheState.empty(B, H, hs, device=q.device, dtype=k.dtype)
    elif not isinstance(state, BoundedCacheState):
        raise TypeError(f"a bounded cache continues a BoundedCacheState (from init_state or stream), not a "
                        f"{type(state).__name__}: the parallel form keeps every token")
    if n == 0:
        return q, (state if output_state else None)
    out = []
    for i in range(n):
        t = state.seen  # (B,)
        keys = torch.cat([state.k, k[:, :, i:i + 1]], dim=2)  # (B, H, K, hs)
        values = torch.cat([state.v, v[:, :, i:i + 1]], dim=2)  # (B, H, K, hs)
        pos = torch.cat([state.pos, t.view(B, 1, 1).expand(B, H, 1)], dim=2)  # (B, H, K)
        score = torch.cat([state.score, state.score.new_zeros(B, H, 1)], dim=2)  # (B, H, K)
        logits = (q[:, :, i:i + 1] @ keys.transpose(-2, -1)).squeeze(2) / math.sqrt(hs)  # (B, H, K)
        if slopes is not None:
            K = pos.size(-1)
            if policy == "sinks":  # positions inside the cache: the query is token K - 1 of it
                distance = torch.arange(K - 1, -1, -1, device=logits.device).to(logits.dtype)  # (K,)
            else:
                distance = (t.view(B, 1, 1) - pos).to(logits.dtype)  # (B, H, K)
            logits = logits - slopes.to(logits.dtype).view(1, H, 1) * distance
        weights = F.softmax(logits, dim=-1)  # (B, H, K)
        out.append((weights[:, :, None] @ values))  # (B, H, 1, hs)
        state = BoundedCacheState(keys, values, pos, score + weights, t + 1)
        if pos.size(-1) >= size:
            state = state.without(_victim(state, weights, size, policy, sinks))
    return torch.cat(out, dim=2), (state if output_state else None)


def __getattr__(name: str):
    from tsrsa.nn.deprecated import resolve

    return resolve(__name__, name, {}, {"empty_bounded_cache": "the state is a BoundedCacheState: "
                                                               "BoundedCacheState.empty(batch_size, n_heads, head_size)"})
