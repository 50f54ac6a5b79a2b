"""``ensemble_size``: a neural forecaster fitted as several networks whose forecasts it averages.

Member k is the network a fit with ``random_state + k`` would train: the same statistical start and
data-derived initialisation, its own initial weights, dropout and order of batches, and early stopping
on its own validation loss. The fitted ``network_`` is then a :class:`tsrsa.nn.ensemble.MemberMean`,
whose forecast is the mean of the members' (each quantile level averaged on its own); ``best_epoch_``
lists each member's epoch and ``fit_history_`` gains a ``member`` column. What averaging buys on the
short series: ``benchmarks/RESULTS.md``, "Seed ensembles on the short series". ``"auto"`` is one network
(:mod:`tsrsa.estimator.plan`).
"""
from __future__ import annotations

import numbers

from tsrsa.estimator.params import check_int
from tsrsa.nn.ensemble import MemberMean
from tsrsa.training.budget import AUTO

__all__ = ["check_ensemble_size", "ensembled", "member_weights", "one_network_reason", "saved_members"]


def one_network_reason(one_network: str | None, loss: str, distribution, checkpoint_dir) -> str | None:
    """Why a configuration fits one network only, or None: its fitted state's ``one_network``, a distribution
    ``loss`` (the mean of its members' parameters is not their mixture) or the trainer's ``checkpoint_dir``."""
    if one_network is not None:
        return one_network
    if distribution is not None:
        return f"loss={loss!r} outputs a distribution's parameters, and their mean is not the members' mixture"
    if checkpoint_dir is not None:
        return "the trainer's checkpoint_dir keeps the state of one training run"
    return None


def check_ensemble_size(size, why_one: str | None) -> None:
    """``ensemble_size`` is "auto" or an int >= 1, and more than one only where several networks can be fitted
    (``why_one``: :func:`one_network_reason`)."""
    if isinstance(size, str) and size == AUTO:
        return
    if not isinstance(size, numbers.Integral) or isinstance(size, bool):
        raise TypeError(f'ensemble_size must be "auto" or an int >= 1, got {size!r} ({type(size).__name__})')
    check_int("ensemble_size", size)
    if size > 1 and why_one is not None:
        raise ValueError(f"ensemble_size={size} trains {size} networks apart and averages them; {why_one}: use "
                         f"ensemble_size=1 with it")


def saved_members(weights: dict) -> int:
    """The members a saved network's state dict holds (1: a single network)."""
    return len({name.split(".")[1] for name in weights if name.startswith("members.")}) or 1


def member_weights(donor: dict, k: int) -> dict:
    """Member k's weights from ``donor``: its own entries when ``donor`` is an ensemble's state dict
    (names ``members.<k>.…``), else the whole of a single network's state dict."""
    if not any(name.startswith("members.") for name in donor):
        return donor
    prefix = f"members.{k}."
    picked = {name[len(prefix):]: value for name, value in donor.items() if name.startswith(prefix)}
    if not picked:
        raise ValueError(f"the weights given hold an ensemble without a member {k}: give those of an ensemble "
                         f"of at least {k + 1} members, or of a single network")
    return picked


def ensembled(model, networks: list, histories: list[list[dict]] = ()):
    """(network, history) of ``model``'s members: the one network and its epochs, or their
    :class:`MemberMean` (a quantile head's levels sorted in each member, as its forecast is reported)
    and every member's epochs, each record with its ``member``."""
    if len(networks) == 1:
        return networks[0], list(histories[0]) if histories else []
    records = [{**record, "member": k} for k, history in enumerate(histories) for record in history]
    return MemberMean(networks, sorted_outputs=model.loss == "quantile"), records
