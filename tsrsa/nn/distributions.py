"""Distribution outputs: a network's head gives a distribution's parameters at every horizon step.

With ``loss`` one of :data:`DISTRIBUTIONS` the head outputs P raw values per step (``n_outputs`` = P)
and the model is trained by the negative log-likelihood of the targets (:class:`DistributionLoss`,
on ``torch.distributions``). The names follow the peers' (neuralforecast's ``DistributionLoss(
distribution="Normal" | "StudentT" | "NegativeBinomial")``, pytorch-forecasting's
``NormalDistributionLoss``, ...) in the lowercase of our ``loss=`` values:

================== ============================= ================================================
name               raw channels -> parameters    mean
================== ============================= ================================================
"normal"           mu; s -> sigma = e^s + 1e-3   mu
"student_t"        mu; s -> sigma = e^s + 1e-3;  mu
                   v -> df = 2 + softplus(v)
"negative_binomial" m -> mean = e^m;             mean (variance mean + mean^2 / total_count)
                   c -> total_count = softplus(c) + 1e-3
================== ============================= ================================================

Scaling. A network reads each window normalised (RevIN, its running form when streaming, and the
estimator's per-series scaler) and restores its output to the data's units, y -> y·std + mean. That is
right for a location, not for a scale: each raw channel has a *kind* that says how it follows when the
data are scaled by s > 0 and shifted by m (:func:`restore_channels`):

- ``"location"`` (mu): y·s + m, as a point forecast;
- ``"log_scale"`` (log sigma, log mean): y + log s, so that sigma (or a count's mean) is multiplied by s
  exactly; this is why these are predicted on the log scale (e^x, not softplus: softplus would not
  commute with the normalisation);
- ``"free"`` (df, total_count): unchanged, a shape that the units do not move.

The floor 1e-3 of sigma is in the scaled units the training reads (each series' spread near 1), so
that the likelihood of a flat stretch stays bounded. A count distribution has no location: its data
cannot be shifted, so its windows are scaled without a shift (``shifts`` False: RevIN divides each
window by its mean absolute value, at least 1, see :mod:`tsrsa.nn.revin`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import distributions as td
from torch import nn

LOCATION, LOG_SCALE, FREE = "location", "log_scale", "free"
#: the smallest sigma, in the scaled units of training
SIGMA_FLOOR = 1e-3
#: log-scale channels are clamped to this range before exp (finite in float32)
LOG_LIMIT = 30.0


@dataclass(frozen=True)
class DistributionOutput:
    """A distribution a head can output: its raw channels, their kinds, and its parameters."""

    name: str
    channels: tuple[str, ...]  # raw channel names, in the head's order
    kinds: tuple[str, ...]  # LOCATION, LOG_SCALE or FREE per channel

    @property
    def n_outputs(self) -> int:
        return len(self.channels)

    @property
    def shifts(self) -> bool:
        """Whether the data may be shifted (a location-scale family); False for counts."""
        return LOCATION in self.kinds

    def parameters(self, raw: torch.Tensor) -> dict[str, torch.Tensor]:
        """The distribution's parameters (..., ) each from raw outputs (..., P)."""
        if self.name == "negative_binomial":
            return {"mean": torch.exp(raw[..., 0].clamp(-LOG_LIMIT, LOG_LIMIT)),
                    "total_count": F.softplus(raw[..., 1]) + 1e-3}
        out = {"loc": raw[..., 0], "scale": torch.exp(raw[..., 1].clamp(max=LOG_LIMIT)) + SIGMA_FLOOR}
        if self.name == "student_t":
            out["df"] = 2.0 + F.softplus(raw[..., 2])
        return out

    def distribution(self, raw: torch.Tensor) -> td.Distribution:
        """The ``torch.distributions`` object of raw outputs (..., P), batch shape (...)."""
        p = self.parameters(raw)
        if self.name == "normal":
            return td.Normal(p["loc"], p["scale"], validate_args=False)
        if self.name == "student_t":
            return td.StudentT(p["df"], p["loc"], p["scale"], validate_args=False)
        r = p["total_count"]
        return td.NegativeBinomial(total_count=r, logits=torch.log(p["mean"]) - torch.log(r), validate_args=False)


#: the distribution outputs by name (the ``loss=`` values that train one)
DISTRIBUTION_OUTPUTS = {
    "normal": DistributionOutput("normal", ("mu", "log_sigma"), (LOCATION, LOG_SCALE)),
    "student_t": DistributionOutput("student_t", ("mu", "log_sigma", "df"), (LOCATION, LOG_SCALE, FREE)),
    "negative_binomial": DistributionOutput("negative_binomial", ("log_mean", "total_count"), (LOG_SCALE, FREE)),
}
DISTRIBUTIONS = tuple(DISTRIBUTION_OUTPUTS)


def get_distribution(name: str | None) -> DistributionOutput | None:
    """The output of distribution ``name`` (None for None: a point or quantile head)."""
    if name is None:
        return None
    if name not in DISTRIBUTION_OUTPUTS:
        raise ValueError(f"distribution={name!r} is not supported; use one of {DISTRIBUTIONS}")
    return DISTRIBUTION_OUTPUTS[name]


def shifts(distribution: str | None) -> bool:
    """Whether the outputs of a head for ``distribution`` may be shifted with the data (all but counts)."""
    output = get_distribution(distribution)
    return output is None or output.shifts


def restore_channels(y: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, distribution: str | None,
                     weight: torch.Tensor | None = None, bias: torch.Tensor | None = None) -> torch.Tensor:
    """Outputs ``y`` (..., Q) of normalised data back in the data's units, channel by channel (module
    docstring): ``mean``/``std`` broadcast against ``y[..., 0]``; ``weight``/``bias``: a learned affine
    map applied after normalising (RevIN's), undone first."""
    output = get_distribution(distribution)
    if output is None:  # every channel a location (a point forecast or quantiles)
        if weight is not None:
            y = (y - bias) / weight
        return y * std[..., None] + mean[..., None]
    out = []
    for k, kind in enumerate(output.kinds):
        c = y[..., k]
        if kind == LOCATION:
            c = ((c - bias) / weight if weight is not None else c) * std + mean
        elif kind == LOG_SCALE:
            c = (c - torch.log(weight.abs()) if weight is not None else c) + torch.log(std)
        out.append(c)
    return torch.stack(out, dim=-1)


class DistributionLoss(nn.Module):
    """Mean negative log-likelihood of targets (...) under the distribution of raw outputs (..., P)."""

    def __init__(self, name: str):
        super().__init__()
        self.output = get_distribution(name)
        self.name = name

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return -self.output.distribution(pred).log_prob(target).mean()
