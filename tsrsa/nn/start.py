"""A statistical start: a fixed linear forecast of the window that a network corrects.

With a start attached, a network's forecast is ``S(x) + C(x)``: ``S`` is a fitted statistical
model's point forecast written as an affine map of the window ``x`` (B, L) in the units the network
reads (the per-series scaled series), ``C`` the network itself with its outputs started at zero
(:func:`zero_outputs`). Before the first optimiser step the forecast is therefore the statistical
model's; training moves away from it only where the data say so.

A network with instance normalisation (RevIN) whose head outputs zero forecasts the window's mean,
not zero; its start subtracts that mean (``minus_mean``), so that ``S(x) + C(x) = S(x)`` at the
start exactly. Every output channel (each quantile) starts at the same point forecast.
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["LinearStart", "attach_start", "horizon_layers", "scale_outputs", "start_groups", "zero_outputs"]


class LinearStart(nn.Module):
    """``S(x) = weight @ x[-window:] + bias`` for each forecast step, minus the window's mean when the
    network it is added to restores that mean.

    Parameters
    ----------
    window : int
        The latest steps of the window the map reads.
    h : int
        Forecast steps.
    minus_mean : bool
        Subtract the mean of the whole window (a RevIN network's forecast at zero output).
    trainable : bool
        Whether an optimiser may move the map (else it stays the fitted model's).
    """

    def __init__(self, window: int, h: int, *, minus_mean: bool, trainable: bool = False):
        super().__init__()
        self.window, self.h, self.minus_mean = int(window), int(h), bool(minus_mean)
        self.weight = nn.Parameter(torch.zeros(self.h, self.window), requires_grad=trainable)
        self.bias = nn.Parameter(torch.zeros(self.h), requires_grad=trainable)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, L) -> (B, h, 1)."""
        y = x[:, -self.window:] @ self.weight.t() + self.bias  # (B, h)
        if self.minus_mean:
            y = y - x.mean(dim=1, keepdim=True)
        return y[..., None]


def attach_start(network: nn.Module, window: int, h: int, *, trainable: bool = False) -> LinearStart:
    """Give ``network`` (a forecasting network of ``tsrsa.nn``) a start of its own: its ``start``
    submodule, added to its output by its ``forward``. Returns the start (its map still zero)."""
    start = LinearStart(window, h, minus_mean=getattr(network, "revin", None) is not None, trainable=trainable)
    network.start = start
    return start


def zero_outputs(network: nn.Module) -> None:
    """Set every layer that writes a network's forecast to zero (``network.output_layers()``: its head, the
    covariates' horizon term)."""
    scale_outputs(network, 0.0)


def scale_outputs(network: nn.Module, factor: float) -> None:
    """Multiply the weights and biases of every layer that writes a network's forecast by ``factor``
    (``network.output_layers()``): its forecast becomes ``factor`` times its own plus ``1 - factor`` times
    what it forecasts with those layers at zero (for a network with a statistical start, the start; with
    RevIN's affine map, the start shifted by what its trained bias restores). 0 sets them to zero
    (:func:`zero_outputs`), whatever they held."""
    with torch.no_grad():
        for linear in network.output_layers():
            for values in (linear.weight, linear.bias):
                if factor == 0:
                    values.zero_()
                else:
                    values.mul_(factor)


def horizon_layers(covariates) -> list[nn.Linear]:
    """The covariates' horizon term's output layer, if the network has one (for ``output_layers``)."""
    return [] if covariates is None or covariates.horizon is None else [covariates.horizon]


def start_groups(network: nn.Module, groups: dict) -> dict:
    """``groups`` with the start's map as the group "start" when the network has a start."""
    start = getattr(network, "start", None)
    return groups if start is None else {**groups, "start": list(start.parameters())}
