"""What every multi-head kind shares: q/k/v projection, head split and merge, output projection,
dropout, width checks and their initialisation."""
from __future__ import annotations

import torch
from torch import nn

from tsrsa.nn.attention import Attention


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, D) -> (B, H, T, D / H)"""
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, hs) -> (B, T, H * hs)"""
    B, H, T, hs = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * hs)


def check_width(d_model, n_heads) -> None:
    for name, value in (("d_model", d_model), ("n_heads", n_heads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be an int >= 1")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")


class MultiHeadAttention(Attention):
    """Base of the multi-head kinds: ``project`` a block input to per-head q, k, v and ``output``
    per-head values back to ``d_model``. Subclasses mix q, k, v their own way.

    Parameters
    ----------
    d_model : int
        Width of the token vectors; a multiple of ``n_heads``.
    n_heads : int
        Number of heads; each reads ``d_model / n_heads`` channels of q, k and v.
    dropout : float, default 0.0
        On the output projection (kinds with attention weights may drop those too).
    causal : bool, default False
        Each token reads only itself and earlier tokens.
    """

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False):
        super().__init__()
        check_width(d_model, n_heads)
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout={dropout!r} must lie in [0, 1)")
        self.d_model, self.n_heads, self.head_size = d_model, n_heads, d_model // n_heads
        self.causal, self.dropout = bool(causal), float(dropout)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.resid_dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        """q/k/v and output projections: N(0, 0.02) weights, zero biases (GPT-2's start)."""
        for linear in (self.qkv, self.proj):
            nn.init.normal_(linear.weight, mean=0.0, std=0.02)
            nn.init.zeros_(linear.bias)

    @property
    def attention_dropout(self) -> float:
        """Dropout probability on attention weights in this mode (0 in evaluation)."""
        return self.dropout if self.training else 0.0

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D) -> q, k, v, each (B, H, T, hs)."""
        q, k, v = self.qkv(x).split(self.d_model, dim=2)  # (B, T, D) each
        return split_heads(q, self.n_heads), split_heads(k, self.n_heads), split_heads(v, self.n_heads)

    def output(self, y: torch.Tensor) -> torch.Tensor:
        """y (B, H, T, hs) -> (B, T, D): merge the heads, project, dropout."""
        return self.resid_dropout(self.proj(merge_heads(y)))
