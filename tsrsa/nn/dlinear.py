"""DLinear (Zeng et al., AAAI 2023): a moving-average trend/remainder split, one linear map each.

    window (B, L) -> trend = moving_average(window), remainder = window - trend
                  -> trend_map(trend) + remainder_map(remainder) -> (B, h, Q)

Channel independence: every series (channel) is one window, so the same two maps serve all
channels. No normalisation inside the network (the estimator scales each series), except for a count
distribution (``distribution="negative_binomial"``), whose raw counts are mean-scaled per window.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.covariates import CovariateInput, covariate_shape, has_covariates, split_inputs
from tsrsa.nn.cycle import cycle_of, removed, restored
from tsrsa.nn.revin import instance_norm
from tsrsa.nn.start import horizon_layers, start_groups

#: width of the covariates' context and hidden layer in DLinear (it has no token width of its own)
COVARIATE_WIDTH = 32


@dataclass
class DLinearConfig:
    input_size: int = 96  # L: look-back window, in steps
    h: int = 24  # forecast horizon, in steps
    kernel_size: int = 25  # moving-average window of the trend, in steps
    n_outputs: int = 1  # values per horizon step (1 for a point forecast, Q for quantiles)
    distribution: str | None = None  # the head outputs this distribution's parameters (tsrsa.nn.distributions)
    covariates: dict = field(default_factory=dict)  # covariate layout (tsrsa.nn.covariates); empty: none
    cycle: tuple | None = None  # (n_series, period) of a learned cycle per series (tsrsa.nn.cycle); None: none


class MovingAverage(nn.Module):
    """Centred moving average over ``kernel_size`` steps, the ends padded with the edge values.

    The front is padded with ``(k - 1) // 2`` copies of the first value and the back with the
    rest (``k // 2``), so the output has the input's length for every k (for odd k this is
    DLinear's own padding, (k - 1) / 2 copies at each end).
    """

    def __init__(self, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.front = (kernel_size - 1) // 2
        self.back = kernel_size - 1 - self.front

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        padded = torch.cat([
            x[:, :1].expand(-1, self.front),  # (B, front)
            x,  # (B, L)
            x[:, -1:].expand(-1, self.back),  # (B, back)
        ], dim=1)  # (B, L + k - 1)
        return F.avg_pool1d(padded[:, None, :], self.kernel_size, stride=1)[:, 0, :]  # (B, L)


class DLinearNetwork(nn.Module):
    """Windows ``(B, input_size)`` -> forecasts ``(B, h, n_outputs)``: two linear maps of the
    trend and the remainder of each window, added."""

    def __init__(self, config: DLinearConfig):
        super().__init__()
        self.config = config
        out = config.h * config.n_outputs
        self.moving_average = MovingAverage(config.kernel_size)
        self.trend_map = nn.Linear(config.input_size, out)
        self.remainder_map = nn.Linear(config.input_size, out)
        self._init_weights()
        self.norm = instance_norm(False, config.distribution)  # None but for counts: their mean scaling
        self.start = None  # a statistical start (tsrsa.nn.start), attached by a forecaster that asks for one
        self.cycle = cycle_of(config)
        self.covariates = None
        if has_covariates(config):  # the whole look-back as one token: a linear map, then the horizon term
            self.covariates = CovariateInput(covariate_shape(config), d_model=COVARIATE_WIDTH,
                                             patch_len=config.input_size, h=config.h,
                                             n_outputs=config.n_outputs, horizon=True)

    def _init_weights(self) -> None:
        # As Time-Series-Library's DLinear: every output starts as the mean of its input
        # (weights 1/L); the biases keep torch's default uniform initialisation.
        with torch.no_grad():
            for linear in (self.trend_map, self.remainder_map):
                linear.weight.fill_(1.0 / self.config.input_size)

    def decompose(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L) -> trend (B, L), remainder (B, L) with trend + remainder = x."""
        trend = self.moving_average(x)  # (B, L)
        return trend, x - trend

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """Named groups of parameters an optimiser may treat apart: the statistical start's, if any."""
        return start_groups(self, {})

    def output_layers(self) -> list[nn.Linear]:
        """The linear layers that write the forecast (a statistical start zeroes them)."""
        return [self.trend_map, self.remainder_map, *horizon_layers(self.covariates)]

    def forward(self, inputs) -> torch.Tensor:
        """``inputs``: windows (B, L), or a :class:`~tsrsa.nn.covariates.CovariateBatch`."""
        x, batch = split_inputs(inputs)
        window, stats = x, None
        if self.norm is not None:
            x, stats = self.norm.normalise(x)  # (B, L)
        x = removed(self.cycle, x, batch)  # (B, L)
        trend, remainder = self.decompose(x)  # (B, L), (B, L)
        y = self.trend_map(trend) + self.remainder_map(remainder)  # (B, h * Q)
        y = restored(self.cycle, y.view(x.size(0), self.config.h, self.config.n_outputs), batch,
                     self.config.input_size)  # (B, h, Q)
        y = self.norm.denormalise(y, stats) if stats is not None else y
        if batch is not None and self.covariates is not None:
            context = self.covariates.tokens(batch)  # (B, 1, W) or None (known-future alone)
            context = context[:, 0] if context is not None else x.new_zeros(x.size(0), COVARIATE_WIDTH)
            y = y + self.covariates.forecast(batch, context)  # (B, h, Q)
        return y if self.start is None else y + self.start(window)
