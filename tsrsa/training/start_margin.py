"""Whether a trained network replaces the statistical start it began at: a margin on validation.

A network started at a statistical model (``validate_start``) scores its starting weights on the
validation windows as epoch 0. Training keeps the epoch of lowest mean validation loss, and chosen
over a hundred epochs on a few dozen windows that lowest mean flatters the network. With a margin
of ``z`` the best epoch replaces the start only when its mean per-window validation loss is lower
than the start's by more than ``z`` standard errors of the mean per-window difference; otherwise the
network goes back to the start. The windows of a series overlap (stride 1, ``h`` steps each), so
the differences are autocorrelated up to lag ``h - 1``: the standard error is Newey-West's
(heteroskedasticity and autocorrelation consistent, Bartlett weights; statsmodels' ``HAC``).
"""
from __future__ import annotations

import numpy as np
import torch

from tsrsa.training.devices import autocast


@torch.no_grad()
def window_losses(network, loss_fn, loader, device, precision: str = "32") -> np.ndarray | None:
    """(n,) the loss of every window of ``loader``, in its order (over several ranks: rank 0's
    windows, then rank 1's, ...); None when ``loss_fn`` has no per-window form (``per_window``)."""
    per_window = getattr(loss_fn, "per_window", None)
    if per_window is None:
        return None
    network.eval()
    parts, state = [], None
    for x, y in loader.iterate():
        with autocast(device, precision):
            pred, state = loader.outputs(network, x, state)
        parts.append(per_window(pred.float(), y).double().cpu().numpy())
    losses = np.concatenate(parts) if parts else np.empty(0)
    rank = loader.rank
    if rank.world_size > 1:
        gathered = [None] * rank.world_size
        torch.distributed.all_gather_object(gathered, losses, group=rank.group)
        losses = np.concatenate(gathered)
    return losses


def edge(network_losses: np.ndarray, start_losses: np.ndarray, lag: int) -> float:
    """The network's edge over the start in standard errors: ``-mean(d) / se(mean(d))`` of the
    per-window differences ``d = network - start`` (positive when the network is better), the
    standard error Newey-West's with ``lag`` lags. 0 when nothing differs; +-inf when every window
    differs alike."""
    import statsmodels.api as sm

    d = np.asarray(network_losses, dtype=np.float64) - np.asarray(start_losses, dtype=np.float64)
    if len(d) == 0 or not np.any(d):
        return 0.0
    mean = float(d.mean())
    if len(d) == 1 or np.ptp(d) <= 1e-12 * abs(mean):  # the same difference in every window (to rounding)
        return float(-np.sign(mean) * np.inf)
    fit = sm.OLS(d, np.ones(len(d))).fit(cov_type="HAC", cov_kwds={"maxlags": int(min(max(lag, 0), len(d) - 1))})
    return -mean / float(fit.bse[0])
