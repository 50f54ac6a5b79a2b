"""``input_size="auto"``: the look-back chosen on the validation windows.

The long-horizon literature's lesson is that a look-back chosen per data set (336 to 720 steps) is
worth more than most changes of the network; the anchors choose it on their validation split. This
does the same inside a fit:

- candidates: :data:`LOOKBACKS` (96, 192, 336, 720 steps), those that leave the shortest series
  :data:`~tsrsa.estimator.plan.MIN_TRAINING_WINDOWS` training windows; none: the default rule's look-back
  (``input_size=None``); one: that one, without a probe;
- each candidate is a probe: this model with that look-back, one network and no conformal calibration,
  validated on the last ``val_size`` steps of each series (``h`` steps when ``val_size=0``: the fit that
  follows then trains on every step), trained for ``max(1, floor(E * PROBE_SHARE / k))`` epochs (E:
  ``max_epochs``, or the automatic budget's least, ``MIN_EPOCHS``, when "auto"; k candidates), so that
  the probes together cost about :data:`PROBE_SHARE` of a fit at the automatic budget's least;
- the look-back of the lowest validation loss (the probe's best epoch, in the units of the loss the
  model trains with, on the same validation targets whatever the look-back) is kept, and the fit runs
  at it with its own plan; the plan's reason for ``input_size`` lists every candidate's loss.
"""
from __future__ import annotations

import math
import time

import numpy as np

from tsrsa.data.frequency import look_back_seasons
from tsrsa.estimator.plan import MIN_TRAINING_WINDOWS, default_input_size
from tsrsa.training import budget

#: the look-backs ``input_size="auto"`` compares (the long-horizon protocols' lengths)
LOOKBACKS = (96, 192, 336, 720)
#: the probes' epochs together, as a share of the least automatic budget (or of ``max_epochs``)
PROBE_SHARE = 0.5


def is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


def candidates(h: int, shortest: int) -> list[int]:
    """The look-backs that leave a training part of ``shortest`` steps ``MIN_TRAINING_WINDOWS`` windows."""
    room = shortest - h - (MIN_TRAINING_WINDOWS - 1)
    return [L for L in LOOKBACKS if L <= room]


def probe_epochs(max_epochs, k: int) -> int:
    """Epochs of each of ``k`` probes (module docstring)."""
    total = max_epochs if not is_auto(max_epochs) else budget.MIN_EPOCHS
    return max(1, math.floor(int(total) * PROBE_SHARE / k))


def choose_lookback(model, panel, fit_lengths) -> tuple[int, str]:
    """(the look-back, the plan's reason) of ``model`` (``input_size="auto"``) on ``panel`` (whose series'
    training parts have ``fit_lengths`` steps)."""
    held = int(model.val_size) or int(model.h)  # the probes' validation steps
    shortest = int(panel.lengths.min()) - held
    found = candidates(int(model.h), shortest)
    if not found:
        fallback, _, why = default_input_size(int(model.h), model.patch_steps(), int(fit_lengths.min()),
                                              look_back_seasons(panel.freq))
        return fallback, (f"'auto': none of {list(LOOKBACKS)} leaves the shortest series ({shortest} training steps) "
                          f"{MIN_TRAINING_WINDOWS} training windows; the default rule's {why}")
    if len(found) == 1:
        return found[0], f"'auto': {found[0]}, the only one of {list(LOOKBACKS)} the shortest series holds"
    epochs = probe_epochs(model.max_epochs, len(found))
    losses, began = [], time.perf_counter()
    for L in found:
        probe = model.clone().set_params(input_size=L, max_epochs=epochs, ensemble_size=1, conformal_windows=None,
                                         val_size=held)
        probe.fit_panel(panel)
        losses.append(float(np.nanmin(probe.fit_history_["val_loss"].to_numpy(dtype=np.float64))))
    best = found[int(np.argmin(losses))]
    listed = ", ".join(f"{L} ({loss:.4g})" for L, loss in zip(found, losses))
    return best, (f"'auto': {best}, the lowest validation loss of {listed} after {epochs} epoch(s) each "
                  f"({time.perf_counter() - began:.1f} s)")
