"""Reversible instance normalisation (Kim et al., ICLR 2022) for univariate windows."""
from __future__ import annotations

import torch
from torch import nn


class RevIN(nn.Module):
    """Normalise each input window by its own mean and spread; undo it on the forecast.

    Parameters
    ----------
    affine : bool, default True
        Learn a scale and shift applied after normalising (and inverted before restoring).
    eps : float, default 1e-5
        Added to the variance.
    """

    def __init__(self, affine: bool = True, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = nn.Parameter(torch.ones(1))
            self.bias = nn.Parameter(torch.zeros(1))

    def normalise(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """x (B, L) -> normalised (B, L) and the statistics (mean (B, 1), std (B, 1))."""
        mean = x.mean(dim=1, keepdim=True)  # (B, 1)
        std = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps)  # (B, 1)
        z = (x - mean) / std
        if self.affine:
            z = z * self.weight + self.bias
        return z, (mean, std)

    def denormalise(self, y: torch.Tensor, stats: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """y (B, h, Q) in normalised units -> the input's units."""
        mean, std = stats
        if self.affine:
            y = (y - self.bias) / (self.weight + self.eps * self.eps)
        return y * std[:, :, None] + mean[:, :, None]
