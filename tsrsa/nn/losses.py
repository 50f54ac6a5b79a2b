"""Training losses on forecasts ``(B, h, Q)`` against targets ``(B, h)``.

Point losses read one output per step, the quantile loss one per level, and a distribution loss
(:mod:`tsrsa.nn.distributions`) the distribution's raw parameters.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.distributions import DISTRIBUTIONS, DistributionLoss

LOSSES = ("mse", "mae", "huber", "quantile", *DISTRIBUTIONS)


class PointLoss(nn.Module):
    """MSE, MAE or Huber (delta 1) on a single output per step."""

    def __init__(self, name: str):
        super().__init__()
        if name not in ("mse", "mae", "huber"):
            raise ValueError(f"loss={name!r} is not a point loss; use 'mse', 'mae' or 'huber'")
        self.name = name

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred = pred[..., 0]  # (B, h)
        if self.name == "mse":
            return F.mse_loss(pred, target)
        if self.name == "mae":
            return F.l1_loss(pred, target)
        return F.huber_loss(pred, target, delta=1.0)

    def per_window(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """(B,) the loss of each window: the mean of :meth:`forward` is the mean of these."""
        pred = pred[..., 0]
        if self.name == "huber":
            err = F.huber_loss(pred, target, reduction="none", delta=1.0)
        else:
            err = (F.mse_loss if self.name == "mse" else F.l1_loss)(pred, target, reduction="none")
        return err.flatten(1).mean(1)


class QuantileLoss(nn.Module):
    """Pinball loss averaged over quantiles, steps and windows.

    For quantile q and error e = y - ŷ_q: max(q e, (q - 1) e).
    """

    def __init__(self, quantiles):
        super().__init__()
        self.register_buffer("quantiles", torch.as_tensor(list(quantiles), dtype=torch.float32))

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        err = target[..., None] - pred  # (B, h, Q)
        q = self.quantiles.to(pred.dtype)  # (Q,)
        return torch.maximum(q * err, (q - 1) * err).mean()

    def per_window(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """(B,) the pinball loss of each window, averaged over its quantiles and steps."""
        err = target[..., None] - pred
        q = self.quantiles.to(pred.dtype)
        return torch.maximum(q * err, (q - 1) * err).flatten(1).mean(1)


def make_loss(name: str, quantiles=None) -> nn.Module:
    """The loss module for ``name`` (one of LOSSES); "quantile" needs ``quantiles``."""
    if name == "quantile":
        return QuantileLoss(quantiles)
    if name in DISTRIBUTIONS:
        return DistributionLoss(name)
    if name not in LOSSES:
        raise ValueError(f"loss={name!r} is not supported; use one of {LOSSES}")
    return PointLoss(name)
