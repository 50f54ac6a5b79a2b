"""The training budget that scales with the data, both ways: ``max_epochs="auto"``,
``batches_per_epoch="auto"`` and ``early_stopping_patience="auto"``.

A fixed number of epochs is a different amount of training on every data set: ten epochs are a few
dozen optimiser steps on a series of a few hundred points and seventy thousand on M4 Hourly's 414
series. The rule counts optimiser steps instead:

- an epoch reads every training window once, or at most ``EPOCH_STEPS`` batches drawn afresh from
  the shuffled windows when a pass is longer (so that validation, early stopping and the schedule
  keep their grip on a large panel);
- epochs: enough for about ``TARGET_STEPS`` optimiser steps, at least ``MIN_EPOCHS`` and at most
  ``MAX_EPOCHS``;
- patience: a fifth of those epochs, at least ``MIN_PATIENCE`` (only with validation data).

So a fit runs between ``TARGET_STEPS`` and ``MIN_EPOCHS * EPOCH_STEPS`` optimiser steps, except on
data so short that ``MAX_EPOCHS`` passes are fewer. A number of epochs given by the user counts
whole passes (``batches_per_epoch="auto"`` then reads every window), as it does in every peer.
The evidence for the constants is in docs/benchmark_configuration.md.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

AUTO = "auto"
TARGET_STEPS = 2000
EPOCH_STEPS = 400
MIN_EPOCHS = 10
MAX_EPOCHS = 100
MIN_PATIENCE = 3
#: the share of a one-cycle schedule's steps that raise the rate to its peak (torch's ``pct_start``)
ONECYCLE_WARMUP = 0.3


@dataclass(frozen=True)
class Budget:
    """What a fit runs with: ``epochs`` of ``batches_per_epoch`` batches (None: every window)."""

    epochs: int
    batches_per_epoch: int | None
    patience: int | None

    def steps(self, n_windows: int, batch_size: int) -> int:
        """The optimiser steps of the whole budget over ``n_windows`` training windows."""
        per_epoch = steps_per_pass(n_windows, batch_size)
        if self.batches_per_epoch is not None:
            per_epoch = min(per_epoch, self.batches_per_epoch)
        return self.epochs * per_epoch


def steps_per_pass(n_windows: int, batch_size: int) -> int:
    """Optimiser steps of one pass over ``n_windows`` windows."""
    return max(1, math.ceil(int(n_windows) / int(batch_size)))


def auto_epochs(n_windows: int, batch_size: int, batches_per_epoch: int | None = None) -> int:
    """Epochs giving about ``TARGET_STEPS`` optimiser steps over ``n_windows`` training windows, epochs
    of at most ``batches_per_epoch`` batches."""
    per_epoch = steps_per_pass(n_windows, batch_size)
    if batches_per_epoch is not None:
        per_epoch = min(per_epoch, int(batches_per_epoch))
    return int(min(MAX_EPOCHS, max(MIN_EPOCHS, math.ceil(TARGET_STEPS / per_epoch))))


def auto_patience(max_epochs: int) -> int:
    """Early-stopping patience for a run of ``max_epochs`` epochs."""
    return max(MIN_PATIENCE, int(max_epochs) // 5)


def warmup_epochs(max_epochs: int, lr_schedule: str | None) -> int:
    """The epochs in which a one-cycle schedule raises the rate (0 for the other schedules).

    Early stopping spends no patience in them: while the rate climbs, the validation loss says little
    about where the run will end, and a stop there keeps a network that never trained at a falling
    rate (or the statistical start alone)."""
    return math.ceil(ONECYCLE_WARMUP * int(max_epochs)) if lr_schedule == "onecycle" else 0


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
                   has_validation: bool, batches_per_epoch=AUTO) -> Budget:
    """The budget a fit runs with: "auto" resolved by the rule above, numbers kept.

    ``batches_per_epoch="auto"`` caps an epoch at ``EPOCH_STEPS`` batches when ``max_epochs`` is "auto"
    too, and reads every window when the epochs are a number; None always reads every window; a
    number caps every epoch at that many batches (and "auto" epochs count those). Without
    validation data early stopping is off (patience None), whatever was asked.
    """
    cap = batches_per_epoch
    if cap == AUTO:
        cap = EPOCH_STEPS if max_epochs == AUTO and steps_per_pass(n_windows, batch_size) > EPOCH_STEPS else None
    epochs = auto_epochs(n_windows, batch_size, cap) if max_epochs == AUTO else int(max_epochs)
    if not has_validation or early_stopping_patience is None:
        return Budget(epochs, cap, None)
    patience = auto_patience(epochs) if early_stopping_patience == AUTO else int(early_stopping_patience)
    return Budget(epochs, cap, patience)
