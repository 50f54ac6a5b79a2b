"""Multi-head softmax self-attention (Vaswani et al. 2017), the vanilla attention kind."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.registry import Attention, register_attention


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


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, D) -> (B, H, T, D / H)"""
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, hs) -> (B, T, H * hs)"""
    B, H, T, hs = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * hs)


@register_attention("softmax")
class SoftmaxAttention(Attention):
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
    """

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        self.n_heads = n_heads
        self.causal = causal
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.resid_dropout = nn.Dropout(dropout)
        self.fused = hasattr(F, "scaled_dot_product_attention")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape  # (B, T, D)
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).split(D, dim=2))  # (B, H, T, hs)
        p = self.dropout if self.training else 0.0
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=self.causal)
        else:
            y = softmax_attention(q, k, v, causal=self.causal, dropout=p, training=self.training)
        return self.resid_dropout(self.proj(merge_heads(y)))  # (B, T, D)
