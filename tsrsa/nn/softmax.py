"""Multi-head softmax self-attention (Vaswani et al. 2017), the vanilla attention kind.

Its recurrent form is a key/value cache: a causal softmax transformer is an RNN whose state is
every past key and value of every layer (Oren et al. 2024), so the state grows by one token per
step and ``stream`` costs O(tokens seen) per new token (a bounded cache caps it:
``tsrsa.nn.kv_cache``). The forms, each ``(q, k, v, ..., state=None) -> (output, final state)``:

- ``softmax_attention``: the explicit lines, the reference of the fused kernel;
- ``softmax_parallel``: the fused kernel (``scaled_dot_product_attention``), for training; over fewer
  than ``SMALL_SOFTMAX_KEYS`` keys on the CPU the explicit lines with ``SmallSoftmax``, faster there;
- ``softmax_recurrent``: n new tokens over the cache (unbounded) or ``bounded_attend`` (bounded);
- ``GatedWeights``: the weights of ``softmax_weights`` mixed by a gate with matrices shared by the
  batch, for one product with v (RSA's composed folded step: ``RSAAttention.folded_weights``).

With a state, the queries are the last n of the state's keys followed by the n new ones.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.attention import KindOps, register_attention
from tsrsa.nn.kv_cache import BoundedCacheState, CacheSpec, KeyValueState, bounded_attend
from tsrsa.nn.multihead import MultiHeadAttention

__all__ = ["GatedWeights", "SMALL_SOFTMAX_KEYS", "SmallSoftmax", "SoftmaxAttention", "alibi_slopes",
           "position_bias", "softmax_attention", "softmax_parallel", "softmax_recurrent", "softmax_weights"]


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
    if slopes is None and not causal:
        return None
    distance = (T - n + torch.arange(n, device=device))[:, None] - torch.arange(T, device=device)[None, :]  # (n, T)
    if slopes is None:
        return distance >= 0
    bias = -slopes.view(-1, 1, 1) * distance.abs().to(slopes.dtype)  # (H, n, T)
    return bias.masked_fill(distance < 0, float("-inf")) if causal else bias


def _with_history(k, v, state: KeyValueState | None):
    """The state's keys and values followed by the new ones: (B, H, T, hs) each."""
    if state is None:
        return k, v
    if isinstance(state, BoundedCacheState):
        raise TypeError("a bounded cache has no parallel form: stream it (softmax_recurrent with its CacheSpec)")
    return torch.cat([state.k, k], dim=-2), torch.cat([state.v, v], dim=-2)  # (B, H, T, hs)


def softmax_attention(q, k, v, *, causal: bool = False, slopes: torch.Tensor | None = None, dropout: float = 0.0,
                      training: bool = False, state: KeyValueState | None = None, output_state: bool = True):
    """softmax(q kᵀ / √d + bias) v, the explicit lines (the reference of the fused kernel).

    q, k, v (B, H, n, hs) of n new tokens; ``state``: the earlier keys and values (None: none).
    Returns (B, H, n, hs) and the cache after the new tokens.
    """
    keys, values = _with_history(k, v, state)  # (B, H, T, hs)
    att = softmax_weights(q, keys, causal=causal, slopes=slopes, dropout=dropout, training=training)  # (B, H, n, T)
    return att @ values, (KeyValueState(keys, values) if output_state else None)  # (B, H, n, hs)


#: below this many keys the CPU's softmax kernel is slower than a few plain ops (torch 2.13, 32 x 4 x T rows, forward
#: and backward: 141 against 78 µs over 6 keys, 486 against 145 over 12; the kernel is faster from 16 keys on)
SMALL_SOFTMAX_KEYS = 16


class SmallSoftmax(torch.autograd.Function):
    """softmax over the last dimension in plain ops, backward y (g - sum(g y)): on the CPU faster than the
    kernel over few keys (``SMALL_SOFTMAX_KEYS``), equal to it up to rounding."""

    @staticmethod
    def forward(ctx, x):
        e = (x - x.amax(-1, keepdim=True)).exp_()
        y = e.div_(e.sum(-1, keepdim=True))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(-1, keepdim=True))


def few_keys(x: torch.Tensor, n_keys: int) -> bool:
    """Whether attention over ``n_keys`` keys with x's device and type takes ``SmallSoftmax``: few keys,
    float, on the CPU."""
    return x.device.type == "cpu" and n_keys < SMALL_SOFTMAX_KEYS and x.dtype in (torch.float32, torch.float64)


def softmax_weights(q, keys, *, causal: bool = False, slopes: torch.Tensor | None = None, dropout: float = 0.0,
                    training: bool = True) -> torch.Tensor:
    """The attention weights dropout(softmax(q kᵀ / √d + bias)): q (B, H, n, hs), the last n of the T
    positions of keys (B, H, T, hs) -> (B, H, n, T). The fused kernel's, in the same order (its dropout
    draws the same mask from the same generator state); q is scaled before the product, (n, hs) numbers
    rather than (n, T)."""
    n, T = q.size(-2), keys.size(-2)
    att = (q / math.sqrt(q.size(-1))) @ keys.transpose(-2, -1)  # (B, H, n, T)
    bias = position_bias(n, T, slopes, causal=causal, device=q.device)  # (n, T) bool or (H, n, T)
    if bias is not None:
        att = att.masked_fill(~bias, float("-inf")) if bias.dtype == torch.bool else att + bias.to(att.dtype)
    weights = SmallSoftmax.apply(att) if few_keys(att, T) else F.softmax(att, dim=-1)
    return F.dropout(weights, p=dropout, training=training)


class GatedWeights(torch.autograd.Function):
    """(1 - g) w + g m: weights w (B, H, n, T), matrices m (H, n, T) shared by the batch, gate g (H,).

    Its backward reads the batch's gradient once per input (the gradient of ``torch.lerp`` with m and g
    broadcast to w's shape takes a product and a sum over the batch's shape for each)."""

    @staticmethod
    def forward(ctx, w, m, g):
        ctx.save_for_backward(w, m, g)
        return torch.lerp(w, m, g.view(-1, 1, 1))  # (B, H, n, T)

    @staticmethod
    def backward(ctx, grad):
        w, m, g = ctx.saved_tensors
        g3 = g.view(-1, 1, 1)
        grad_w = grad * (1 - g3) if ctx.needs_input_grad[0] else None
        summed = grad.sum(0) if ctx.needs_input_grad[1] or ctx.needs_input_grad[2] else None  # (H, n, T)
        grad_m = summed * g3 if ctx.needs_input_grad[1] else None
        grad_g = None
        if ctx.needs_input_grad[2]:  # the sum of grad (m - w) per head
            grad_g = (summed * m).sum((1, 2)) - (grad * w).sum((0, 2, 3))  # (H,)
        return grad_w, grad_m, grad_g


def softmax_parallel(q, k, v, *, causal: bool = False, slopes: torch.Tensor | None = None, dropout: float = 0.0,
                     state: KeyValueState | None = None, output_state: bool = True):
    """The fused kernel: as ``softmax_attention`` (``dropout`` acts whenever it is above 0); over few keys on
    the CPU the explicit lines with ``SmallSoftmax`` (the kernel's softmax is slower there)."""
    if state is None and few_keys(k, k.size(-2)):
        y = softmax_weights(q, k, causal=causal, slopes=slopes, dropout=dropout) @ v  # (B, H, T, hs)
        return y, (KeyValueState(k, v) if output_state else None)
    if state is None:
        if slopes is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal)  # (B, H, T, hs)
        else:
            T = q.size(-2)
            bias = position_bias(T, T, slopes, causal=causal, device=q.device).to(q.dtype)  # (H, T, T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout)
        return y, (KeyValueState(k, v) if output_state else None)
    keys, values = _with_history(k, v, state)  # (B, H, T, hs)
    mask = position_bias(q.size(-2), keys.size(-2), slopes, causal=causal, device=q.device)
    if slopes is not None:
        mask = mask.to(q.dtype)  # (H, n, T) additive
    y = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, dropout_p=dropout)  # (B, H, n, hs)
    return y, (KeyValueState(keys, values) if output_state else None)


def softmax_recurrent(q, k, v, *, slopes: torch.Tensor | None = None, cache: CacheSpec | None = None,
                      state: KeyValueState | None = None, output_state: bool = True):
    """The recurrent form: n new tokens q, k, v (B, H, n, hs) attend causally over the cache and
    themselves; a bounded ``cache`` keeps at most ``cache.size - 1`` tokens (``bounded_attend``).
    Returns (B, H, n, hs) and the cache after them (``KeyValueState`` or ``BoundedCacheState``)."""
    B, H, _, hs = q.shape
    if cache is not None and cache.bounded:
        return bounded_attend(q, k, v, size=cache.size, policy=cache.policy, sinks=cache.sinks, slopes=slopes,
                              state=state, output_state=output_state)
    if state is None:
        state = KeyValueState.empty(B, H, hs, device=q.device, dtype=k.dtype)
    return softmax_parallel(q, k, v, causal=True, slopes=slopes, state=state, output_state=output_state)


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
    state_type = KeyValueState  # BoundedCacheState, a subclass, with a bounded cache
    ops = KindOps(parallel=softmax_parallel, recurrent=softmax_recurrent)

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False,
                 alibi: bool = False, cache_size: int | None = None, cache_policy: str = "window",
                 cache_sinks: int = 4):
        super().__init__(d_model, n_heads, dropout=dropout, causal=causal)
        self.cache = CacheSpec(cache_size, cache_policy, cache_sinks)
        self.fused = hasattr(F, "scaled_dot_product_attention")
        register_alibi(self, n_heads, alibi)
        self.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.parallel(x, output_state=False)[0]  # (B, T, D)

    def parallel(self, x: torch.Tensor, state: KeyValueState | None = None, *, output_state: bool = True):
        q, k, v = self.project(x)  # (B, H, T, hs)
        p, output_state = self.attention_dropout, output_state and self.causal
        if self.fused or self.slopes is not None:
            y, state = softmax_parallel(q, k, v, causal=self.causal, slopes=self.slopes, dropout=p, state=state,
                                        output_state=output_state)
        else:
            y, state = softmax_attention(q, k, v, causal=self.causal, dropout=p, training=self.training, state=state,
                                         output_state=output_state)
        return self.output(y), state  # (B, T, D)

    # ------------------------------------------------------------------ recurrent form
    def state_size(self, n_tokens: int) -> int:
        return self.cache.state_size(n_tokens, self.d_model, self.n_heads)

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> KeyValueState:
        device = device if device is not None else self.qkv.weight.device
        empty = BoundedCacheState.empty if self.cache.bounded else KeyValueState.empty
        return empty(batch_size, self.n_heads, self.head_size, device=device, dtype=dtype or self.qkv.weight.dtype)

    def stream(self, x: torch.Tensor, state: KeyValueState) -> tuple[torch.Tensor, KeyValueState]:
        self.check_streamable()
        q, k, v = self.project(x)  # (B, H, n, hs)
        y, state = softmax_recurrent(q, k, v, slopes=self.slopes, cache=self.cache, state=state)  # (B, H, n, hs)
        return self.output(y), state


def __getattr__(name: str):
    from tsrsa.nn.deprecated import resolve

    def branch(q, k, v, slopes, *, causal: bool, dropout: float):
        return softmax_parallel(q, k, v, causal=causal, slopes=slopes, dropout=dropout, output_state=False)[0]

    return resolve(__name__, name, {"softmax_branch": ("softmax_parallel (it returns (output, state))", lambda: branch)},
                   {"KeyValueCache": "the cache is a KeyValueState (tsrsa.nn.kv_cache), advanced by softmax_recurrent",
                    "cached_softmax_attention": "softmax_recurrent(q, k, v, state=KeyValueState(...)) attends over "
                                                "the cache and the new tokens"})
