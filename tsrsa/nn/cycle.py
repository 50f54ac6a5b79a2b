"""A learned cycle per series, removed from a window before the network reads it and added back to its
forecast: the residual cycle forecasting of CycleNet (Lin et al., NeurIPS 2024).

Each series s has a table Q_s of W values (W: the cycle's period in steps), zero at the start. A step
whose absolute step number is t (:meth:`tsrsa.data.frequency.Frequency.ordinals`: the same for every
series sharing a timestamp) sits at phase t mod W. With the window's first step at phase p, a network
with the cycle computes, on the window x (L,) normalised by the network's instance normalisation,

    c_i = Q_s[(p + i) mod W],  i = 0 .. L - 1 + h
    x'_i = x_i - c_i           (i < L: the window without its cycle)
    y_j = f(x')_j + c_(L + j)  (j < h: the network's forecast of the rest, plus the cycle ahead)

then undoes the normalisation, as CycleNet's reference does (its ``RecurrentCycle`` gathers the table at
those phases; the paper's Eq. 2-4). A quantile head adds the same cycle to every level. A series the
network did not train on (row -1) reads the mean of the trained rows.
"""
from __future__ import annotations

import torch
from torch import nn


class RecurrentCycle(nn.Module):
    """The cycle tables (module docstring): ``n_series`` rows of ``period`` values, zero at the start.

    ``forward(where, offset, length)`` reads (B, length) values: ``where`` (B, 2) int64 holds each window's
    series row (-1: the mean row) and the phase of its first step; ``offset`` steps after that phase."""

    def __init__(self, n_series: int, period: int):
        super().__init__()
        if n_series < 1 or period < 2:
            raise ValueError(f"a cycle needs at least one series and a period of 2 steps or more; got "
                             f"n_series={n_series}, period={period}")
        self.period = int(period)
        self.table = nn.Parameter(torch.zeros(int(n_series), self.period))  # (S, W)

    def forward(self, where: torch.Tensor, offset: int, length: int) -> torch.Tensor:
        series, phase = where[:, 0], where[:, 1]  # (B,) each
        rows = torch.cat([self.table, self.table.mean(dim=0, keepdim=True)])  # (S + 1, W): row -1 is the mean
        steps = torch.arange(offset, offset + length, device=where.device)  # (length,)
        columns = torch.remainder(phase[:, None] + steps[None, :], self.period)  # (B, length)
        return rows[series[:, None], columns]  # (B, length)


def cycle_of(config) -> RecurrentCycle | None:
    """The cycle a network configuration asks for (its ``cycle``: (n_series, period) or None)."""
    cycle = getattr(config, "cycle", None)
    return None if not cycle else RecurrentCycle(int(cycle[0]), int(cycle[1]))


def removed(cycle: RecurrentCycle | None, x: torch.Tensor, batch) -> torch.Tensor:
    """The normalised window ``x`` (B, L) without its cycle: ``x`` itself without a cycle, or when called
    without the windows' rows and phases (``batch.cycle``), as a network called without its covariates
    reads none of them (``explain()`` reads bare windows)."""
    if cycle is None or batch is None or batch.cycle is None:
        return x
    return x - cycle(batch.cycle, 0, x.size(1)).to(x.dtype)


def restored(cycle: RecurrentCycle | None, y: torch.Tensor, batch, input_size: int) -> torch.Tensor:
    """The normalised forecast ``y`` (B, h, Q) plus the cycle of the ``h`` steps after the window (``y``
    itself as :func:`removed` leaves ``x``)."""
    if cycle is None or batch is None or batch.cycle is None:
        return y
    return y + cycle(batch.cycle, input_size, y.size(1)).to(y.dtype)[:, :, None]
