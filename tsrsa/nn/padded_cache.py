"""The bounded key/value cache in fixed slots: ``bounded_attend`` with static shapes, for exporters.

``bounded_attend`` (:mod:`tsrsa.nn.kv_cache`) keeps a cache whose length grows token by token up to
``size - 1`` and drops a token with a ``nonzero`` selection: shapes that follow the data, which a graph
of static shapes (ONNX) cannot hold. Here the same cache lives in ``K = size - 1`` slots from the first
token on. The slots keep the tokens in the order ``bounded_attend`` keeps them (oldest first), the
empty slots after them; how many are filled is not a tensor of its own: a cache that has streamed
``seen`` tokens holds ``min(seen, K)`` (each token joins, and one leaves once ``size`` are held).

One step, for a new token with key k, value v and query q at stream position t = ``seen``:

    slots   = the K slots, then the new token's             (B, H, K + 1, ·), filled: the first min(t, K) and the last
    weights = softmax(q · slotsᵀ / √d − ALiBi, empty slots at −∞)       (B, H, K + 1)
    y       = weights @ values;  score += weights                       as ``bounded_attend``
    drop    = the policy's token when all K + 1 are filled (``_victim``, the same rule), else none
    slots'  = the kept slots in order, then the empty ones: output slot i reads the (i + 1)-th kept slot,
              i.e. the number of slots j whose running count of kept slots is <= i (a gather, no ``nonzero``)

What an empty slot holds is never read: its weight is 0, and a slot past the filled ones is
overwritten before it is filled. ``pos`` and ``seen`` stay int64 as in ``BoundedCacheState``; the
window and sinks policies compare positions in float64 (exact below 2^53).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from tsrsa.nn.kv_cache import BoundedCacheState, CacheSpec

__all__ = ["empty_slots", "slotted", "slotted_attend"]


def empty_slots(batch_size: int, n_heads: int, head_size: int, size: int, *, device=None,
                dtype=None) -> BoundedCacheState:
    """The state of an empty history in ``size - 1`` slots: k, v (B, H, K, hs), pos and score (B, H, K), seen (B,)."""
    K = size - 1
    kv = (batch_size, n_heads, K, head_size)
    return BoundedCacheState(torch.zeros(kv, device=device, dtype=dtype), torch.zeros(kv, device=device, dtype=dtype),
                             torch.zeros(batch_size, n_heads, K, device=device, dtype=torch.long),
                             torch.zeros(batch_size, n_heads, K, device=device, dtype=dtype),
                             torch.zeros(batch_size, device=device, dtype=torch.long))


def slotted(state: BoundedCacheState, size: int) -> BoundedCacheState:
    """A ``bounded_attend`` state (its cache of n <= size - 1 tokens) in ``size - 1`` slots, the empty ones zero."""
    K = size - 1
    n = state.pos.size(-1)
    if n > K:
        raise ValueError(f"a cache of {n} tokens does not fit {K} slots (cache size {size})")
    k, v = (F.pad(t, (0, 0, 0, K - n)) for t in (state.k, state.v))  # (B, H, K, hs)
    pos, score = (F.pad(t, (0, K - n)) for t in (state.pos, state.score))  # (B, H, K)
    return BoundedCacheState(k, v, pos, score, state.seen)


def _victim(pos, score, weights, filled, size: int, policy: str, sinks: int) -> torch.Tensor:
    """``kv_cache._victim`` over K + 1 slots of which ``filled`` (B, 1, K + 1) hold tokens: the slot (B, H) to drop
    (read only when every slot is filled, as ``bounded_attend`` drops only then)."""
    if policy == "window":
        return torch.where(filled, pos.double(), math.inf).argmin(-1)
    if policy == "sinks":
        return torch.where(filled & (pos >= sinks), pos.double(), math.inf).argmin(-1)
    if policy == "h2o":
        newest = torch.where(filled, pos, torch.zeros_like(pos)).amax(-1, keepdim=True)  # (B, H, 1)
        recent = pos >= newest - (size // 2) + 1  # the most recent size // 2 tokens
        return torch.where(filled & ~recent, score, math.inf).argmin(-1)
    shared = torch.where(filled, weights, math.inf).mean(1).argmin(-1)  # tova: (B,), the heads' mean weight
    return shared[:, None].expand(-1, pos.size(1))


def slotted_attend(q, k, v, *, size: int, policy: str, sinks: int = 4, slopes: torch.Tensor | None = None,
                   state: BoundedCacheState, output_state: bool = True):
    """``bounded_attend`` on a cache in ``size - 1`` fixed slots (module docstring): n new tokens q, k, v
    (B, H, n, hs) one at a time from ``state`` (``empty_slots`` or ``slotted``). Returns (B, H, n, hs) and the
    state after them, in slots; its filled slots equal ``bounded_attend``'s cache within rounding."""
    CacheSpec(size, policy, sinks)  # checked as the torch form checks it
    B, H, n, hs = q.shape
    K = size - 1
    if state.pos.size(-1) != K:
        raise ValueError(f"a cache in slots has {K} slots for cache size {size}, got {state.pos.size(-1)}: "
                         f"start from empty_slots or slotted")
    slot = torch.arange(K + 1, device=q.device)  # (K + 1,)
    out = []
    for i in range(n):
        t = state.seen  # (B,)
        held = torch.clamp(t, max=K)  # (B,) filled slots before the new token
        filled = ((slot[None, :] < held[:, None]) | (slot[None, :] == K))[:, None, :]  # (B, 1, K + 1)
        keys = torch.cat([state.k, k[:, :, i:i + 1]], dim=2)  # (B, H, K + 1, hs)
        values = torch.cat([state.v, v[:, :, i:i + 1]], dim=2)  # (B, H, K + 1, hs)
        pos = torch.cat([state.pos, t.view(B, 1, 1).expand(B, H, 1)], dim=2)  # (B, H, K + 1)
        score = torch.cat([state.score, torch.zeros_like(state.score[:, :, :1])], dim=2)  # (B, H, K + 1)
        logits = (q[:, :, i:i + 1] @ keys.transpose(-2, -1)).squeeze(2) / math.sqrt(hs)  # (B, H, K + 1)
        if slopes is not None:
            if policy == "sinks":  # positions inside the cache: the filled slots after this one
                after = filled.long()
                distance = (after.sum(-1, keepdim=True) - after.cumsum(-1)).to(logits.dtype)  # (B, 1, K + 1)
            else:
                distance = (t.view(B, 1, 1) - pos).to(logits.dtype)  # (B, H, K + 1)
            logits = logits - slopes.to(logits.dtype).view(1, H, 1) * distance
        weights = torch.softmax(torch.where(filled, logits, -math.inf), dim=-1)  # (B, H, K + 1), empty slots 0
        out.append(weights[:, :, None] @ values)  # (B, H, 1, hs)
        score = score + weights
        full = (held == K).view(B, 1, 1)  # the new token makes size tokens: one leaves
        drop = _victim(pos, score, weights, filled, size, policy, sinks)  # (B, H)
        kept = filled & ~(full & (slot == drop[..., None]))  # (B, H, K + 1)
        count = kept.long().cumsum(-1)  # (B, H, K + 1) kept slots up to each
        source = (count[:, :, None, :] <= slot[:K, None]).long().sum(-1).clamp(max=K)  # (B, H, K)
        k_next, v_next = (t.gather(2, source[..., None].expand(-1, -1, -1, hs)) for t in (keys, values))
        state = BoundedCacheState(k_next, v_next, pos.gather(2, source), score.gather(2, source), t + 1)
    y = torch.cat(out, dim=2) if out else q  # (B, H, n, hs)
    return y, (state if output_state else None)
