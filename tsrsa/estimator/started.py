"""The statistical start of the neural forecasters: ``start`` (a :class:`~tsrsa.estimator.groups.Start`).

:mod:`tsrsa.start.fit` fits the map; :class:`StatisticalStart`, the part of a neural forecaster its
``statistical_start`` gives, checks the options, fits the map on the scaled training parts before the
network is built, attaches it (:mod:`tsrsa.nn.start`) and starts the network's own outputs at zero, so
that the untrained forecast is the statistical model's. It holds no fitted state: what it fits it returns,
and the estimator passes it back. The
fitted ``start_`` (a dict: the model, its order or forms, the window it reads) is saved with the
model; the map's values are weights of the network (``start.weight``, ``start.bias``).

Once trained, the forecast is the start's S plus the network's correction C. The start's ``weight`` w gives
the start that weight in a combination of the two forecasts, ``w S + (1 - w) (S + C) = S + (1 - w) C``:
C is linear in the network's output layers, so their weights and biases are multiplied by ``1 - w``
and the fitted network is the combination (saved, loaded, fine-tuned and explained as any network).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from tsrsa.estimator.groups import Start
from tsrsa.estimator.plan import SHORT_START_WEIGHT as AUTO_START_WEIGHT  # noqa: F401 (its old home)
from tsrsa.nn.start import attach_start, scale_outputs, zero_outputs
from tsrsa.start.fit import fit_start
from tsrsa.training.budget import AUTO


def start_refusal(no_start: str | None, loss: str, distribution) -> str | None:
    """Why a configuration takes no statistical start (the rest of a refusal), or None: its fitted state's
    ``no_start`` (a streaming network has no window to start from), or a distribution ``loss``."""
    if no_start is not None:
        return no_start
    if distribution is not None:
        return (f"starts a point or quantile forecast; loss={loss!r} outputs a distribution's "
                f"parameters: use start=None with it")
    return None


@dataclasses.dataclass(frozen=True)
class StatisticalStart:
    """The statistical start of one configuration (module docstring): ``options`` (the resolved
    :class:`~tsrsa.estimator.groups.Start`), the horizon ``h``, ``refusal`` (why the configuration takes none,
    :func:`start_refusal`) and whether its head outputs quantiles."""

    options: Start
    h: int
    refusal: str | None = None
    quantile_head: bool = False

    def check(self) -> None:
        """The options against the configuration: ValueError naming the fix."""
        weight = self.options.weight
        if not (isinstance(weight, str) and weight == AUTO) and weight > 0 and self.quantile_head:
            raise ValueError(f"start=Start(weight={weight}) shrinks the network's correction of a point forecast; "
                             f"loss='quantile' learns the spread of its levels in that correction: use "
                             f"start=Start(weight=0) with it")
        if self.refusal is not None and self.options.kind not in (None, "auto"):  # "auto" starts only where one applies
            raise ValueError(f"start={self.options.kind!r} {self.refusal}")

    def applies(self) -> bool:
        """Whether a start is fitted: ``kind`` is set and, for "auto", the configuration has a window to read and
        a point or quantile forecast to start (not ``stream=True``, not a distribution)."""
        kind = self.options.kind
        return kind is not None and (kind != "auto" or self.refusal is None)

    def fit(self, candidates, scaled, offsets, fit_lengths, lengths, freq, input_size: int):
        """The start fitted on the scaled training parts (:mod:`tsrsa.start.fit`) among ``candidates`` (the fit
        plan's ``start_candidates``; several are scored on the held-out steps after the training parts): its
        map (``weight``, ``bias``, ``record``), or None without candidates."""
        if not candidates:
            return None
        periods = freq.natural_periods() if freq.is_datetime else []
        series = [np.asarray(scaled[o:o + n], dtype=np.float64) for o, n in zip(offsets, fit_lengths)]
        kind = self.options.kind
        held_out = None if kind != "auto" else [  # only "auto" reads the steps after the training parts
            np.asarray(scaled[o + n:o + m], dtype=np.float64) for o, n, m in zip(offsets, fit_lengths, lengths)]
        model = candidates[0] if len(candidates) == 1 and kind != "auto" else "auto"
        return fit_start(model, series, input_size, self.h, int(periods[0]) if periods else 1, held_out, candidates)

    @staticmethod
    def record(fitted) -> dict | None:
        """``start_`` of a fitted map (None: no start): the model, its order or forms, the window it reads."""
        return None if fitted is None else {**fitted.record, "window": int(fitted.weight.shape[1])}

    def attach(self, network: torch.nn.Module, record: dict | None) -> torch.nn.Module:
        """``network`` with the (still zero) map of the fitted start ``record`` attached (none without one)."""
        if record is not None:
            attach_start(network, record["window"], self.h, trainable=self.options.learning_rate > 0)
        return network

    @staticmethod
    def write(network: torch.nn.Module, fitted) -> None:
        """Write the fitted map into ``network`` and start its own outputs at zero."""
        zero_outputs(network)
        with torch.no_grad():
            network.start.weight.copy_(torch.as_tensor(fitted.weight))
            network.start.bias.copy_(torch.as_tensor(fitted.bias))

    def optimiser_groups(self, groups: dict | None, record: dict | None) -> dict | None:
        """The network's optimiser ``groups`` and, when a start was fitted and trains, the start's at its
        ``learning_rate``."""
        rate = self.options.learning_rate
        if record is not None and rate > 0:
            groups = {**(groups or {}), "start": {"lr": float(rate), "weight_decay": 0.0}}
        return groups

    @staticmethod
    def combined(networks, record: dict | None, weight: float) -> dict | None:
        """The trained ``networks`` of a fit keep ``1 - w`` of their correction, w the start's ``weight`` as the
        fit plan resolved it; returns ``record`` with ``start_weight`` (None without a start)."""
        if record is None:
            return None
        for network in networks:
            scale_outputs(network, 1.0 - weight)
        return {**record, "start_weight": weight}
