"""What a training checkpoint must hold before a fit resumes from it.

:func:`check_state` reads the state a checkpoint file gave back (:mod:`tsrsa.training.checkpoint`) and
refuses it, with a ValueError naming the file and saying how to start afresh, when anything the loop
restores is missing, of another type, shape or dtype, not finite, or inconsistent: the weights (the
network's, the best epoch's and the start's: the same names, shapes and dtypes), the optimiser's,
the schedule's and the gradient scaler's states (:mod:`tsrsa.training.checkpoint_optim`), the history
(epochs 1, 2, ... within the run's budget of ``max_epochs``, finite losses), the best epoch and its
loss (the lowest monitored loss), the patience left (within the run's patience), and the random
states. Given the network and the optimiser of the run that resumes, it also checks the file
against them. Nothing is restored before all of it passed.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from tsrsa.training.checkpoint_optim import Fault, check_optimizer, check_scaler, check_schedule, is_number

#: what the training loop writes into every checkpoint
KEYS = ("network", "optimizer", "scheduler", "grad_scaler", "history", "best_epoch", "best_loss", "best_state",
        "patience_left", "random", "start_state", "start_losses", "fingerprint")
#: the fields of every epoch's record in the history
RECORD = ("epoch", "train_loss", "val_loss", "learning_rate", "seconds")
#: numpy's bit generators a checkpoint may name (its batches' generator)
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
AFRESH = "Remove the file to start the fit afresh, or give this fit another checkpoint_dir"


@dataclass(frozen=True)
class RunLimits:
    """What the run that resumes allows: its budget of epochs, its patience (None: no early stopping),
    its learning rate and weight decay, the schedule it steps (None: none) and whether it scales
    gradients (fp16)."""

    max_epochs: int
    patience: int | None
    learning_rate: float
    weight_decay: float
    schedule: str | None
    scaled: bool


def check_state(state, path, limits: RunLimits | None = None, *, network=None, optimizer=None) -> None:
    """ValueError naming ``path`` when ``state`` is not a checkpoint the run of ``limits`` (and of
    ``network`` and ``optimizer``, when given) can resume from; see the module docstring."""
    try:
        check_contents(state, limits, network, optimizer)
    except Fault as fault:
        raise ValueError(f"{path} is not a usable training checkpoint: {fault}. {AFRESH}") from None
    except (TypeError, AttributeError, KeyError, IndexError, RuntimeError, OverflowError) as error:
        raise ValueError(f"{path} is not a usable training checkpoint: its contents cannot be checked "
                         f"({type(error).__name__}: {str(error)[:200]}). {AFRESH}") from None


def check_contents(state, limits, network, optimizer) -> None:
    if not isinstance(state, dict):
        raise Fault(f"it holds a {type(state).__name__}, not a dict of the training state")
    missing = [key for key in KEYS if key not in state]
    if missing:
        raise Fault(f"it has no {missing} entry")
    live = None if network is None else network.state_dict()
    weights = check_weights("network", state["network"], live, "this fit's network")
    check_weights("best_state", state["best_state"], weights, "its network")
    if state["start_state"] is not None:
        check_weights("start_state", state["start_state"], weights, "its network")
    check_optimizer(state["optimizer"], weights, limits, optimizer)
    check_schedule(state["scheduler"], limits, len(state["optimizer"]["param_groups"]))
    check_scaler(state["grad_scaler"], limits)
    check_progress(state, limits)
    rate = state["optimizer"]["param_groups"][0]["lr"]
    if rate != state["history"][-1]["learning_rate"]:
        raise Fault(f"its optimizer's learning rate {rate!r} is not the one its last epoch records")
    check_random(state["random"])
    losses = state["start_losses"]
    if losses is not None and not (torch.is_tensor(losses) and losses.dim() == 1 and losses.is_floating_point()
                                   and bool(torch.isfinite(losses).all())):
        raise Fault("its start_losses are not a 1-D tensor of finite losses")


def check_weights(name: str, weights, like=None, like_name: str = "") -> dict:
    """``weights`` a non-empty dict of finite tensors by name; with ``like`` (``like_name``), of its names,
    shapes and dtypes."""
    if not isinstance(weights, dict) or not weights:
        raise Fault(f"its {name} is not a dict of weights")
    for key, value in weights.items():
        if not isinstance(key, str) or not torch.is_tensor(value):
            raise Fault(f"its {name} holds {key!r}, which is not a named tensor")
        if value.is_complex() or value.is_quantized or value.layout != torch.strided:
            raise Fault(f"its {name} holds {key!r} of dtype {value.dtype} ({value.layout})")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise Fault(f"its {name} holds NaN or infinite values in {key!r} (a fit never saves such weights)")
    if like is not None:
        if list(weights) != list(like):
            absent = [k for k in like if k not in weights] or [k for k in weights if k not in like]
            raise Fault(f"its {name} names other weights than {like_name} (e.g. {absent[:3]})")
        for key, value in weights.items():
            if value.shape != like[key].shape or value.dtype != like[key].dtype:
                raise Fault(f"its {name} holds {key!r} of shape {tuple(value.shape)} and dtype {value.dtype}, "
                            f"where {like_name} has {tuple(like[key].shape)}, {like[key].dtype}")
    return weights


def check_progress(state: dict, limits: RunLimits | None) -> None:
    """The history, the best epoch and its loss, and the patience left agree with each other and the run."""
    history = state["history"]
    if not isinstance(history, list) or not history:
        raise Fault("its history is not a list of finished epochs")
    monitored = []
    for number, record in enumerate(history, start=1):
        if not isinstance(record, dict) or any(key not in record for key in RECORD):
            raise Fault(f"its history's record {number} is not a dict of {list(RECORD)}")
        epoch, train, val, rate, seconds = (record[key] for key in RECORD)
        if type(epoch) is not int or epoch != number:
            raise Fault(f"its history's record {number} says epoch {epoch!r}")
        if not (is_number(train) and (is_number(val) or (type(val) is float and math.isnan(val)))
                and is_number(rate) and rate >= 0 and is_number(seconds) and seconds >= 0):
            raise Fault(f"its history's record {number} holds a loss, rate or time that is not a finite number")
        monitored.append(train if math.isnan(val) else val)
    if len({math.isnan(record["val_loss"]) for record in history}) > 1:
        raise Fault("its history has validation losses for some epochs only")
    if limits is not None and len(history) > limits.max_epochs:
        raise Fault(f"its history claims {len(history)} finished epochs, but this fit trains for "
                    f"max_epochs={limits.max_epochs}")
    best, loss = state["best_epoch"], state["best_loss"]
    if type(best) is not int or not 0 <= best <= len(history):
        raise Fault(f"its best epoch {best!r} is not one of its {len(history)} epochs (or 0, the start)")
    if not is_number(loss) or loss > min(monitored) or (best > 0 and loss != monitored[best - 1]):
        raise Fault(f"its best loss {loss!r} is not the loss of its best epoch {best}, the lowest of its history")
    check_patience(state["patience_left"], limits)


def check_patience(left, limits: RunLimits | None) -> None:
    """The patience left: None without early stopping, else a count within the run's patience."""
    if left is None and (limits is None or limits.patience is None):
        return
    if type(left) is not int or left < 0 or (limits is not None and (limits.patience is None
                                                                     or left > limits.patience)):
        allowed = "None" if limits is not None and limits.patience is None else (
            f"0 to {limits.patience}" if limits is not None else "None or a count")
        raise Fault(f"its patience left is {left!r}, where this fit allows {allowed}")


def check_random(random) -> None:
    """The random states a resumed epoch restores: torch's CPU state and, when there, numpy's and CUDA's."""
    if not isinstance(random, dict) or not torch.is_tensor(random.get("torch")):
        raise Fault("its random states have no torch state")
    for key in ("torch", "cuda"):
        value = random.get(key)
        if value is not None and not (torch.is_tensor(value) and value.dtype == torch.uint8 and value.dim() == 1):
            raise Fault(f"its {key} random state is not a byte tensor")
    try:
        torch.Generator().set_state(random["torch"])
    except RuntimeError as error:
        raise Fault(f"its torch random state is not one ({str(error)[:120]})") from None
    if "numpy" in random:
        check_numpy_state(random["numpy"])


def check_numpy_state(text) -> None:
    """``text``: the JSON of a state of one of numpy's BIT_GENERATORS."""
    try:
        state = json.loads(text) if isinstance(text, str) else None
        name = state.get("bit_generator") if isinstance(state, dict) else None
        if name not in BIT_GENERATORS:
            raise Fault(f"its numpy random state names the bit generator {name!r}")
        getattr(np.random, name)().state = state
    except (ValueError, TypeError, KeyError, OverflowError) as error:
        if isinstance(error, Fault):
            raise
        raise Fault(f"its numpy random state is not one ({str(error)[:120]})") from None
