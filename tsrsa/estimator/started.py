"""The statistical start of the neural forecasters: ``start`` (a :class:`~tsrsa.estimator.groups.Start`).

:mod:`tsrsa.start.fit` fits the map; this mixin checks the arguments, fits the map on the
scaled training parts before the network is built, attaches it (:mod:`tsrsa.nn.start`) and starts
the network's own outputs at zero, so that the untrained forecast is the statistical model's. The
fitted ``start_`` (a dict: the model, its order or forms, the window it reads) is saved with the
model; the map's values are weights of the network (``start.weight``, ``start.bias``).

Once trained, the forecast is the start's S plus the network's correction C. The start's ``weight`` w gives
the start that weight in a combination of the two forecasts, ``w S + (1 - w) (S + C) = S + (1 - w) C``:
C is linear in the network's output layers, so their weights and biases are multiplied by ``1 - w``
and the fitted network is the combination (saved, loaded, fine-tuned and explained as any network).
"""
from __future__ import annotations

import numpy as np
import torch

from tsrsa.estimator.plan import SHORT_START_WEIGHT as AUTO_START_WEIGHT  # noqa: F401 (its old home)
from tsrsa.nn.start import attach_start, scale_outputs, zero_outputs
from tsrsa.start.fit import fit_start
from tsrsa.training.budget import AUTO


class StatisticalStart:
    """Mixin of :class:`~tsrsa.estimator.neural.NeuralForecaster` (module docstring)."""

    def _check_start(self) -> None:
        start = self.resolved_start  # each option checked (tsrsa.estimator.groups.Start)
        weight = start.weight
        if not (isinstance(weight, str) and weight == AUTO) and weight > 0 and self._quantile_levels() is not None:
            raise ValueError(f"start=Start(weight={weight}) shrinks the network's correction of a point forecast; "
                             f"loss='quantile' learns the spread of its levels in that correction: use "
                             f"start=Start(weight=0) with it")
        why = self.why_no_start()
        if why is not None and start.kind not in (None, "auto"):  # "auto" starts only where a start applies
            raise ValueError(f"start={start.kind!r} {why}")

    def why_no_start(self) -> str | None:
        """Why this configuration takes no statistical start (the rest of a refusal), or None."""
        reason = self.state_type().no_start
        if reason is not None:
            return reason
        if self._distribution() is not None:
            return (f"starts a point or quantile forecast; loss={self.loss!r} outputs a distribution's "
                    f"parameters: use start=None with it")
        return None

    def _optimiser_groups(self) -> dict | None:
        """The subclass's groups, and the statistical start's at its ``learning_rate`` when it trains."""
        groups = self._group_options()
        rate = self.resolved_start.learning_rate
        if getattr(self, "start_", None) is not None and rate > 0:
            groups = {**(groups or {}), "start": {"lr": float(rate), "weight_decay": 0.0}}
        return groups

    def _assemble(self, config) -> torch.nn.Module:
        """The network for ``config``, with the fitted statistical start's (still zero) map attached."""
        network = self.build_network(config)
        if getattr(self, "start_", None) is not None:
            attach_start(network, self.start_["window"], int(self.h), trainable=self.resolved_start.learning_rate > 0)
        return network

    def _fit_start(self, scaled, offsets, fit_lengths, lengths, freq) -> None:
        """``start_``: the statistical start fitted on the scaled training parts (:mod:`tsrsa.start.fit`),
        among the fit plan's candidates (``plan_.start_candidates``, :mod:`tsrsa.estimator.plan`); several
        are scored on the held-out steps after the training parts."""
        self.start_, self._start_map = None, None
        candidates = self.plan_.start_candidates
        if not candidates:
            return
        periods = freq.natural_periods() if freq.is_datetime else []
        series = [np.asarray(scaled[o:o + n], dtype=np.float64) for o, n in zip(offsets, fit_lengths)]
        kind = self.resolved_start.kind
        held_out = None if kind != "auto" else [  # only "auto" reads the steps after the training parts
            np.asarray(scaled[o + n:o + m], dtype=np.float64) for o, n, m in zip(offsets, fit_lengths, lengths)]
        model = candidates[0] if len(candidates) == 1 and kind != "auto" else "auto"
        self._start_map = fit_start(model, series, self.resolved_input_size, int(self.h),
                                    int(periods[0]) if periods else 1, held_out, candidates)
        self.start_ = {**self._start_map.record, "window": int(self._start_map.weight.shape[1])}

    def _start_applies(self) -> bool:
        """Whether a start is fitted: the start's ``kind`` is set and, for "auto", the configuration has a window
        to read and a point or quantile forecast to start (not ``stream=True``, not a distribution)."""
        kind = self.resolved_start.kind
        return kind is not None and (kind != "auto" or self.why_no_start() is None)

    def _started(self, network) -> None:
        """Write the fitted start's map into the network and start its own outputs at zero."""
        zero_outputs(network)
        with torch.no_grad():
            network.start.weight.copy_(torch.as_tensor(self._start_map.weight))
            network.start.bias.copy_(torch.as_tensor(self._start_map.bias))

    def _members_built(self, trained=()) -> None:
        """Every network of the fit is built and started: drop what only their building read (the map's
        values live in the networks now); the networks of a finished fit (``trained``) keep ``1 - w`` of
        their correction, w the resolved start's ``weight``, recorded in ``start_["start_weight"]``."""
        self._start_map = None
        if not trained or getattr(self, "start_", None) is None:
            return
        weight = self._resolved_start_weight()
        for network in trained:
            scale_outputs(network, 1.0 - weight)
        self.start_ = {**self.start_, "start_weight": weight}

    def _resolved_start_weight(self) -> float:
        """The start's ``weight`` as the fit plan resolved it (:mod:`tsrsa.estimator.plan`)."""
        return float(self.plan_.start_weight or 0.0)
