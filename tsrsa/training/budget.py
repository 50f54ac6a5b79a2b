"""The training budget that scales with the data: ``max_epochs="auto"`` and ``early_stopping_patience="auto"``.

A fixed number of epochs is a different amount of training on every data set: ten epochs over
ETTh1 (8,000 windows) are 2,600 optimiser steps, ten epochs over a series of a few hundred steps
are a few dozen. The rule counts optimiser steps instead:

- epochs: enough for about ``TARGET_STEPS`` optimiser steps, at least ``MIN_EPOCHS`` and at most
  ``MAX_EPOCHS``;
- patience: a fifth of those epochs, at least ``MIN_PATIENCE`` (only with validation data).

On the benchmarks it was measured on (docs/benchmark_configuration.md) it gives 10 epochs and
patience 3 on ETTh, ETTm and weather at batch 32 (Time-Series-Library's budget) and 100 epochs
with patience 20 on series of a few hundred steps.
"""
from __future__ import annotations

import math
import numbers

AUTO = "auto"
TARGET_STEPS = 2000
MIN_EPOCHS = 10
MAX_EPOCHS = 100
MIN_PATIENCE = 3


def auto_epochs(n_windows: int, batch_size: int) -> int:
    """Epochs giving about ``TARGET_STEPS`` optimiser steps over ``n_windows`` training windows."""
    steps_per_epoch = max(1, math.ceil(int(n_windows) / int(batch_size)))
    return int(min(MAX_EPOCHS, max(MIN_EPOCHS, math.ceil(TARGET_STEPS / steps_per_epoch))))


def auto_patience(max_epochs: int) -> int:
    """Early-stopping patience for a run of ``max_epochs`` epochs."""
    return max(MIN_PATIENCE, int(max_epochs) // 5)


def check_budget(name: str, value, *, allow_none: bool) -> None:
    """``value`` is "auto", an int >= 1 or (where allowed) None; a clear error otherwise."""
    if isinstance(value, str) and value == AUTO:
        return
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        kinds = '"auto", None or an int >= 1' if allow_none else '"auto" or an int >= 1'
        raise TypeError(f"{name} must be {kinds}, got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ValueError(f"{name}={value} must be >= 1 (or \"auto\": scaled to the number of training windows)")


def resolve_budget(max_epochs, early_stopping_patience, n_windows: int, batch_size: int,
                   has_validation: bool, batches_per_epoch: int | None = None) -> tuple[int, int | None]:
    """The epochs and patience a fit runs with: "auto" resolved by the rule above, numbers kept.

    Without validation data early stopping is off (patience None), whatever was asked. With
    ``batches_per_epoch`` an epoch reads at most that many batches, and "auto" counts those.
    """
    if batches_per_epoch is not None:
        n_windows = min(int(n_windows), int(batches_per_epoch) * int(batch_size))
    epochs = auto_epochs(n_windows, batch_size) if max_epochs == AUTO else int(max_epochs)
    if not has_validation or early_stopping_patience is None:
        return epochs, None
    patience = auto_patience(epochs) if early_stopping_patience == AUTO else int(early_stopping_patience)
    return epochs, patience
