"""Reversible instance normalisation (Kim et al., ICLR 2022) for univariate windows."""
from __future__ import annotations

import torch
from torch import nn

from tsrsa.nn.distributions import restore_channels, shifts

#: the smallest window scale of mean scaling (counts: one unit)
MEAN_SCALE_FLOOR = 1.0


class RevIN(nn.Module):
    """Normalise each input window by its own mean and spread; undo it on the forecast.

    Parameters
    ----------
    affine : bool, default True
        Learn a scale and shift applied after normalising (and inverted before restoring).
    eps : float, default 1e-5
        Added to the variance.
    distribution : str, optional
        The distribution the head outputs (``tsrsa.nn.distributions``): each output channel is
        restored by its kind (a location, a log-scale, a free shape). For a count distribution, whose
        data cannot be shifted, a window is divided by its mean absolute value (at least
        ``MEAN_SCALE_FLOOR``) without a shift: DeepAR's mean scaling.
    """

    def __init__(self, affine: bool = True, eps: float = 1e-5, distribution: str | None = None):
        super().__init__()
        self.eps = eps
        self.affine = affine
        self.distribution = distribution
        self.shift = shifts(distribution)
        if affine:
            self.weight = nn.Parameter(torch.ones(1))
            self.bias = nn.Parameter(torch.zeros(1))

    def normalise(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """x (B, L) -> normalised (B, L) and the statistics (mean (B, 1), std (B, 1))."""
        if self.shift:
            mean = x.mean(dim=1, keepdim=True)  # (B, 1)
            std = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps)  # (B, 1)
        else:  # mean scaling
            std = x.abs().mean(dim=1, keepdim=True).clamp(min=MEAN_SCALE_FLOOR)  # (B, 1)
            mean = torch.zeros_like(std)
        z = (x - mean) / std
        if self.affine:
            z = z * self.weight + self.bias
        return z, (mean, std)

    def denormalise(self, y: torch.Tensor, stats: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """y (B, h, Q) in normalised units -> the input's units (each channel by its kind)."""
        mean, std = stats  # (B, 1) each
        if self.affine:
            return restore_channels(y, mean, std, self.distribution, self.weight + self.eps * self.eps, self.bias)
        return restore_channels(y, mean, std, self.distribution)


def instance_norm(revin: bool, distribution: str | None = None) -> RevIN | None:
    """The instance normalisation of a fixed-window network: RevIN when ``revin``; a count
    distribution's mean scaling (RevIN without an affine map) even without it, since raw counts are
    what such a network reads."""
    if revin:
        return RevIN(distribution=distribution)
    return None if shifts(distribution) else RevIN(affine=False, distribution=distribution)
