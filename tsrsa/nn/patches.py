"""Patches: a window cut into tokens of ``patch_len`` steps (PatchTST's tokens; ``patch_len=1`` is one
token per step)."""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["PatchEmbedding", "n_tokens"]


def n_tokens(length: int, patch_len: int) -> int:
    """Tokens of ``length`` steps cut into patches of ``patch_len`` (the first one padded when short)."""
    return -(-int(length) // int(patch_len))


class PatchEmbedding(nn.Module):
    """Cut the window into non-overlapping patches and embed each as one token.

    A window whose length is not a multiple of ``patch_len`` is padded at the front with
    its first value, so that the last token always ends at the last observation.
    """

    def __init__(self, input_size: int, patch_len: int, d_model: int, dropout: float):
        super().__init__()
        self.patch_len = patch_len
        self.n_tokens = n_tokens(input_size, patch_len)
        self.pad = self.n_tokens * patch_len - input_size
        self.value = nn.Linear(patch_len, d_model)
        self.position = nn.Parameter(torch.zeros(1, self.n_tokens, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad:
            x = torch.cat([x[:, :1].expand(-1, self.pad), x], dim=1)  # (B, N * P)
        patches = x.unfold(1, self.patch_len, self.patch_len)  # (B, N, P)
        return self.dropout(self.value(patches) + self.position)  # (B, N, D)
