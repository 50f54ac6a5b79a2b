"""``model.plan(df)``: the fit plan a fit on ``df`` would follow, resolved before any training, with a rough
time for the training measured on this machine (:mod:`tsrsa.estimator.plan` holds the rules)."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from tsrsa.data.validation import check_min_length
from tsrsa.data.windows import ConsecutiveWindows
from tsrsa.estimator.plan import DataSummary, FitPlan, estimate_seconds, resolve_plan
from tsrsa.training import seeded, torch_threads
from tsrsa.training.distributed import plan_placement

#: optimiser steps timed; the first (allocations, first calls) is left out of the median
TIMED_STEPS = 4


def plan_ahead(model, df) -> FitPlan:
    """The plan ``model.fit(df)`` would resolve, with ``estimated_seconds``; ``model`` is left as it is."""
    model.check_params()
    panel = model.to_panel(df)
    need, why = model.required_length(panel)
    check_min_length(panel, need, why)
    fit_lengths = panel.lengths - int(model.val_size)
    model = model.clone()  # the look-back this fit would take, not a fitted one's
    model.input_size_ = model.input_size_for(int(fit_lengths.min()), panel.freq)
    state = model.state_type()
    train = state.training_windows(model, panel.values, panel.offsets, fit_lengths)
    val = state.validation_windows(model, panel.values, panel.offsets, fit_lengths) if model.val_size else None
    trainer = model.resolved_trainer
    placement = plan_placement(trainer.strategy, trainer.accelerator, trainer.devices)
    summary = DataSummary.of(panel, fit_lengths, len(train), 0 if val is None else len(val),
                             model.declared_covariates().active)
    plan = resolve_plan(model, summary, placement=placement, carried=isinstance(train, ConsecutiveWindows))
    return dataclasses.replace(plan, estimated_seconds=round(estimate_seconds(plan, seconds_per_step(
        model, plan, placement.device, min(int(model.batch_size), max(1, summary.train_windows)))), 2))


def seconds_per_step(model, plan: FitPlan, device, batch: int) -> float:
    """The median wall time of an optimiser step of ``model``'s network as ``plan`` shapes it, on random
    windows (a step's work, whatever the head's loss)."""
    probe = model.clone()
    probe.input_size_ = plan.input_size
    probe.plan_ = plan  # what the network's automatic shape reads
    network = probe.build_network(probe.network_config()).to(device)
    optimizer = torch.optim.AdamW(network.parameters(), lr=float(model.learning_rate))
    times = []
    with torch_threads(plan.threads), seeded(0, device):
        x = torch.randn(batch, model.resolved_input_size, device=device)
        for _ in range(TIMED_STEPS):
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            network(x).float().abs().mean().backward()
            optimizer.step()
            times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))
