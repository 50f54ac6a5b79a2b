"""LSTM encoder with a direct multi-horizon head (the recurrent baseline)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tsrsa.nn.covariates import CovariateInput, covariate_shape, has_covariates, split_inputs
from tsrsa.nn.patches import n_tokens
from tsrsa.nn.cycle import cycle_of, removed, restored
from tsrsa.nn.revin import instance_norm
from tsrsa.nn.start import horizon_layers, start_groups


@dataclass
class LSTMConfig:
    input_size: int = 96  # L: look-back window, in steps
    h: int = 24  # forecast horizon, in steps
    patch_len: int = 1  # steps fed to the LSTM per time step (1 = one value per step)
    hidden_size: int = 64  # LSTM state width
    n_layers: int = 2  # stacked LSTM layers
    dropout: float = 0.1  # between LSTM layers and before the head
    revin: bool = True  # reversible instance normalisation of each window
    n_outputs: int = 1  # values per horizon step (1 for a point forecast, Q for quantiles)
    distribution: str | None = None  # the head outputs this distribution's parameters (tsrsa.nn.distributions)
    covariates: dict = field(default_factory=dict)  # covariate layout (tsrsa.nn.covariates); empty: none
    cycle: tuple | None = None  # (n_series, period) of a learned cycle per series (tsrsa.nn.cycle); None: none


class LSTMNetwork(nn.Module):
    """Windows ``(B, input_size)`` -> forecasts ``(B, h, n_outputs)`` from the last LSTM state."""

    def __init__(self, config: LSTMConfig):
        super().__init__()
        self.config = config
        self.patch_len = config.patch_len
        self.n_steps = n_tokens(config.input_size, config.patch_len)
        self.pad = self.n_steps * config.patch_len - config.input_size
        self.revin = instance_norm(config.revin, config.distribution)
        self.covariates = None
        if has_covariates(config):  # each step reads its patch and the covariates' vector of it
            self.covariates = CovariateInput(covariate_shape(config), d_model=config.hidden_size,
                                             patch_len=config.patch_len, h=config.h,
                                             n_outputs=config.n_outputs)
        self.lstm = nn.LSTM(
            input_size=config.patch_len + (config.hidden_size if self.covariates is not None else 0),
            hidden_size=config.hidden_size,
            num_layers=config.n_layers,
            dropout=config.dropout if config.n_layers > 1 else 0.0,
            batch_first=True,
        )
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.hidden_size, config.h * config.n_outputs)
        self.start = None  # a statistical start (tsrsa.nn.start), attached by a forecaster that asks for one
        self.cycle = cycle_of(config)

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """Named groups of parameters an optimiser may treat apart: the statistical start's, if any."""
        return start_groups(self, {})

    def output_layers(self) -> list[nn.Linear]:
        """The linear layers that write the forecast (a statistical start zeroes them)."""
        return [self.head, *horizon_layers(self.covariates)]

    def forward(self, inputs) -> torch.Tensor:
        """``inputs``: windows (B, L), or a :class:`~tsrsa.nn.covariates.CovariateBatch`."""
        x, batch = split_inputs(inputs)
        B = x.size(0)
        window, stats = x, None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)  # (B, L)
        x = removed(self.cycle, x, batch)  # (B, L)
        if self.pad:
            x = torch.cat([x[:, :1].expand(-1, self.pad), x], dim=1)  # (B, T * P)
        steps = x.unfold(1, self.patch_len, self.patch_len)  # (B, T, P)
        extra = self.covariates.tokens(batch) if batch is not None and self.covariates is not None else None
        if extra is not None:
            steps = torch.cat([steps, extra.expand(-1, steps.size(1), -1)], dim=-1)  # (B, T, P + hidden)
        elif self.covariates is not None:  # a network built for covariates, called without: zeros
            steps = torch.cat([steps, steps.new_zeros(B, steps.size(1), self.config.hidden_size)], dim=-1)
        if x.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
            # oneDNN has no reduced-precision LSTM on most CPUs: the recurrence runs in float32
            with torch.autocast("cpu", enabled=False):
                _, (h_n, _) = self.lstm(steps.float())  # h_n: (n_layers, B, hidden)
        else:
            _, (h_n, _) = self.lstm(steps)  # h_n: (n_layers, B, hidden)
        y = self.head(self.dropout(h_n[-1]))  # (B, h * Q)
        y = restored(self.cycle, y.view(B, self.config.h, self.config.n_outputs), batch, self.config.input_size)
        y = self.revin.denormalise(y, stats) if stats is not None else y  # (B, h, Q)
        if batch is not None and self.covariates is not None:
            term = self.covariates.forecast(batch, h_n[-1])  # (B, h, Q) or None
            if term is not None:
                y = y + term
        return y if self.start is None else y + self.start(window)
