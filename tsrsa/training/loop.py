"""One lean training loop: AdamW, clipping, schedules, early stopping, best-weights restore."""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from tsrsa.training.budget import ONECYCLE_WARMUP, warmup_epochs
from tsrsa.training.checkpoint import random_states, restore_random_states
from tsrsa.training.config import LR_SCHEDULES, TrainingConfig
from tsrsa.training.devices import autocast, check_precision
from tsrsa.training.ranks import SINGLE, Rank
from tsrsa.training.start_margin import edge, window_losses


@dataclass
class TrainingResult:
    history: list[dict] = field(default_factory=list)  # one record per finished epoch
    best_epoch: int = 0  # 1-based epoch whose weights the network holds (0: initial weights)
    stopped_early: bool = False
    start_edge: float | None = None  # the best epoch's validation edge over the start, in standard errors


def check_lr_schedule(schedule) -> None:
    if schedule is not None and schedule not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule={schedule!r} is not supported; use None or one of {LR_SCHEDULES}")


def make_scheduler(optimizer, config: TrainingConfig, steps_per_epoch: int):
    check_lr_schedule(config.lr_schedule)
    total_steps = steps_per_epoch * config.max_epochs
    if config.lr_schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(total_steps, 1))
    if config.lr_schedule == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(  # each group peaks at its own rate
            optimizer, max_lr=[group["lr"] for group in optimizer.param_groups], total_steps=max(total_steps, 1),
            pct_start=ONECYCLE_WARMUP)
    if config.lr_schedule == "halving":  # Time-Series-Library's "type1": half the rate after every epoch
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(steps_per_epoch, 1), gamma=0.5)
    return None


def parameter_groups(network: nn.Module, config: TrainingConfig) -> list[dict]:
    """AdamW's parameter groups: every weight at ``learning_rate`` in the first group (the rate the
    history records), except the network's named groups that ``config.group_options`` sets apart.

    Every network declares the groups of its parameters with a ``parameter_groups()`` method returning
    ``{name: [parameters]}`` (every network of ``tsrsa.nn`` has it, most returning none); it is read
    when ``group_options`` names groups, each becoming an AdamW group with those options
    (``{"lr": ..., "weight_decay": ...}``), e.g. RSA's "recurrence" group of REM values and gates at
    a rate of its own.
    """
    options = config.group_options or {}
    if not options:
        return [{"params": list(network.parameters())}]
    offered = network.parameter_groups()
    unknown = sorted(set(options) - set(offered))
    if unknown:
        raise ValueError(f"group_options names parameter group(s) {unknown} that the network does not offer "
                         f"(it offers {sorted(offered)})")
    taken, groups = set(), []
    for name, group_options in options.items():
        params = [p for p in offered[name] if id(p) not in taken]
        taken.update(id(p) for p in params)
        if params:
            groups.append({"params": params, **group_options})
    rest = [p for p in network.parameters() if id(p) not in taken]
    return [{"params": rest}, *groups]


def make_optimizer(network: nn.Module, config: TrainingConfig) -> torch.optim.Optimizer:
    """AdamW, with its fused kernel where the device has one (one kernel for all parameters
    instead of a dozen small ops per tensor: a tenth of a small model's step on the CPU)."""
    groups = parameter_groups(network, config)
    options = dict(lr=config.learning_rate, weight_decay=config.weight_decay)
    try:
        return torch.optim.AdamW(groups, fused=True, **options)
    except (RuntimeError, TypeError, ValueError):  # no fused kernel here (or an old torch)
        return torch.optim.AdamW(groups, **options)


def _snapshot(network: nn.Module) -> dict:
    return {k: v.detach().clone() for k, v in network.state_dict().items()}


@torch.no_grad()
def evaluate_loss(network: nn.Module, loss_fn, loader, device, precision: str = "32") -> float:
    """Mean loss over every window of ``loader`` (weighted by batch size; over all ranks when
    the loader is one rank's share)."""
    network.eval()
    total = torch.zeros((), device=device)
    state = None  # what a loader of consecutive windows carries from one step to the next
    for x, y in loader.iterate():
        with autocast(device, precision):
            pred, state = loader.outputs(network, x, state)
        total += loss_fn(pred.float(), y) * len(y)
    return float(loader.rank.all_reduce_sum(total)) / max(loader.n_windows, 1)


def progress_bar(config: TrainingConfig, train_loader, val_loader):
    """The progress line of a fit at ``verbose >= 1`` (None at 0): optimiser steps of the whole budget
    with elapsed and estimated time left (an upper bound when early stopping may end the fit sooner),
    the windows an epoch reads, the epoch, and the latest training and validation losses."""
    if config.verbose < 1:
        return None
    from tqdm.auto import tqdm

    steps = len(train_loader)
    windows = f"{train_loader.n_windows:,} windows/epoch" + (f", {val_loader.n_windows:,} validation"
                                                            if val_loader is not None else "")
    bar = tqdm(total=config.max_epochs * steps, desc=f"{config.description} ({windows})", unit="step",
               file=sys.stderr, dynamic_ncols=True)
    bar.set_postfix_str(f"epoch 1/{config.max_epochs}")
    return bar


def _report_epoch(bar, epoch: int, max_epochs: int, train_loss: float, val_loss: float, best: int) -> None:
    text = f"epoch {epoch}/{max_epochs}, train {train_loss:.4g}"
    if math.isfinite(val_loss):
        text += f", val {val_loss:.4g} (best epoch {best})"
    bar.set_postfix_str(text)


def train_network(
    network: nn.Module,
    loss_fn: nn.Module,
    train_loader,
    val_loader=None,
    config: TrainingConfig | None = None,
    *,
    device: torch.device = torch.device("cpu"),
    rng: np.random.Generator | None = None,
    rank: Rank = SINGLE,
    on_epoch_end=None,
) -> TrainingResult:
    """Train ``network`` in place and return its record.

    The loaders (:mod:`tsrsa.training.batches`) yield the batches and say what the network outputs for
    their targets: ``loader.outputs(model, x, state)`` returns the outputs and the state to pass to the
    next step (None for independent windows; a network's state for windows that continue each other),
    which this loop holds, per pass.

    With ``rank`` one of several data-parallel processes (see :mod:`tsrsa.training.distributed`;
    the loaders carry the same rank), the network is wrapped in DistributedDataParallel, each
    rank's loss is weighted by its share of the global batch, and the epoch losses are summed
    over ranks, so every rank takes the same steps and the same decisions.

    ``on_epoch_end(record)``, if given, receives a copy of each epoch's record (``epoch``,
    ``train_loss``, ``val_loss``, ``learning_rate``, ``seconds``) once the epoch is done (its best
    weights and, with ``config.checkpoint``, its checkpoint kept); an exception it raises (a tuner's
    prune signal, an interrupt) ends training and propagates.

    With ``config.checkpoint`` (:mod:`tsrsa.training.checkpoint`) the run resumes from the saved
    state of a fit cut short, saves its state after every epoch and removes the file when it ends.

    With a validation loader the network ends with the weights of its best validation epoch
    (and stops after ``early_stopping_patience`` epochs without improvement, not counting the warm-up
    epochs of a one-cycle schedule: :func:`~tsrsa.training.budget.warmup_epochs`); without one it
    keeps its last weights. With ``config.validate_start`` the starting weights are scored first,
    as epoch 0, and kept when no epoch beats them (a network started at a statistical model); with
    ``config.start_margin`` > 0 also when the best epoch beats them by no more than that many standard
    errors of the per-window difference (:mod:`tsrsa.training.start_margin`).

    Raises
    ------
    FloatingPointError
        When the training or validation loss is NaN or inf. The network then holds the best
        weights seen so far (its initial weights if no epoch finished); the error's
        ``training_result`` holds the epochs that finished.
    """
    config = config or TrainingConfig()
    precision = check_precision(config.precision)
    optimizer = make_optimizer(network, config)
    model = network  # what the steps call: the network, or its DDP wrapper
    if rank.data_parallel:
        from torch.nn.parallel import DistributedDataParallel

        # static graph: every step runs the same graph, and parameters some configurations leave
        # unused (e.g. RSA's empty cyclic group) are found once instead of on every step
        model = DistributedDataParallel(network, device_ids=[device.index] if device.type == "cuda" else None,
                                        process_group=rank.group, static_graph=True)
    if config.compile:  # the steps run the compiled module; the network itself stays plain
        model = torch.compile(model, **({} if config.compile is True else {"backend": config.compile}))
    scheduler = make_scheduler(optimizer, config, len(train_loader))
    grad_scaler = torch.amp.GradScaler(device.type) if precision == "16-mixed" else None
    result = TrainingResult()
    best_loss, best_state = math.inf, _snapshot(network)
    patience_left, warmup = config.early_stopping_patience, warmup_epochs(config.max_epochs, config.lr_schedule)
    checkpoint = config.checkpoint if rank.rank == 0 else None
    saved = checkpoint.load(network=network, optimizer=optimizer) if checkpoint is not None else None
    if saved is not None:  # a fit cut short: continue after its last finished epoch
        network.load_state_dict(saved["network"])
        optimizer.load_state_dict(saved["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(saved["scheduler"])
        if grad_scaler is not None:
            grad_scaler.load_state_dict(saved["grad_scaler"])
        result.history, result.best_epoch = list(saved["history"]), int(saved["best_epoch"])
        best_loss, best_state, patience_left = float(saved["best_loss"]), saved["best_state"], saved["patience_left"]
        restore_random_states(saved["random"], rng, device)
    margin_tested = config.validate_start and val_loader is not None and config.start_margin > 0
    start_state, start_losses = None, None
    if saved is not None and margin_tested:
        start_state, start_losses = saved.get("start_state"), saved.get("start_losses")
        start_losses = None if start_losses is None else start_losses.numpy()
    if config.validate_start and val_loader is not None and saved is None:  # epoch 0: the starting weights
        best_loss = evaluate_loss(network, loss_fn, val_loader, device, precision)
        if margin_tested:
            start_state = _snapshot(network)
            start_losses = window_losses(network, loss_fn, val_loader, device, precision)
    bar = progress_bar(config, train_loader, val_loader)
    if bar is not None and result.history:
        bar.update(len(result.history) * len(train_loader))
    clipped = list(network.parameters())  # listed once, not on every step (a frozen one has no gradient)
    try:
        for epoch in range(len(result.history) + 1, config.max_epochs + 1):
            start = time.perf_counter()
            network.train()
            total = torch.zeros((), device=device)
            state = None  # what a loader of consecutive windows carries from one step to the next
            for x, y, share in train_loader.shards(rng):
                optimizer.zero_grad(set_to_none=True)
                with autocast(device, precision):  # (B, h, Q); every token's (B, N, h, Q) for targets after each
                    pred, state = train_loader.outputs(model, x, state)
                loss = loss_fn(pred.float(), y)
                # DDP averages gradients over ranks: weigh each rank's mean by its part of the batch
                step_loss = loss * share if rank.data_parallel else loss
                if grad_scaler is not None:
                    grad_scaler.scale(step_loss).backward()
                    grad_scaler.unscale_(optimizer)
                else:
                    step_loss.backward()
                if config.gradient_clip is not None:
                    nn.utils.clip_grad_norm_(clipped, config.gradient_clip)
                if grad_scaler is not None:
                    grad_scaler.step(optimizer)
                    grad_scaler.update()
                else:
                    optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                total += loss.detach() * len(y)
                if bar is not None:
                    bar.update(1)
            train_loss = float(rank.all_reduce_sum(total)) / max(train_loader.n_windows, 1)  # one sync per epoch
            val_loss = math.nan
            if val_loader is not None:
                val_loss = evaluate_loss(network, loss_fn, val_loader, device, precision)
            checked = [("training", train_loss)] + ([("validation", val_loss)] if val_loader else [])
            for name, value in checked:
                if not math.isfinite(value):
                    network.load_state_dict(best_state)
                    error = FloatingPointError(
                        f"the {name} loss became {value} in epoch {epoch}; the network keeps the "
                        f"weights of epoch {result.best_epoch} (0 = initial). Lower learning_rate, "
                        f"keep gradient clipping on, or check the scale of the data"
                    )
                    error.training_result = result  # the epochs that finished
                    raise error
            result.history.append({
                "epoch": epoch,
                "train_loss": train_loss,
                "val_loss": val_loss,
                "learning_rate": optimizer.param_groups[0]["lr"],
                "seconds": time.perf_counter() - start,
            })
            monitored = val_loss if val_loader is not None else train_loss
            if monitored < best_loss:
                best_loss, best_state, result.best_epoch = monitored, _snapshot(network), epoch
                patience_left = config.early_stopping_patience
            elif val_loader is not None and patience_left is not None and epoch > warmup:
                patience_left -= 1
            if bar is not None:
                _report_epoch(bar, epoch, config.max_epochs, train_loss, val_loss, result.best_epoch)
            if checkpoint is not None:
                checkpoint.save({
                    "network": network.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": None if scheduler is None else scheduler.state_dict(),
                    "grad_scaler": None if grad_scaler is None else grad_scaler.state_dict(),
                    "history": result.history, "best_epoch": result.best_epoch, "best_loss": best_loss,
                    "best_state": best_state, "patience_left": patience_left,
                    "random": random_states(rng, device), "start_state": start_state,
                    "start_losses": None if start_losses is None else torch.from_numpy(start_losses),
                })
            if on_epoch_end is not None:  # after the checkpoint: an interrupt raised here keeps this epoch
                on_epoch_end(dict(result.history[-1]))
            if patience_left is not None and patience_left <= 0 and val_loader is not None:
                result.stopped_early = True
                if bar is not None:  # the line ends full: what was left of the budget is not needed
                    bar.total = bar.n
                break
    finally:
        if bar is not None:
            bar.close()
    if checkpoint is not None:  # finished: nothing left to resume
        checkpoint.remove()
    if val_loader is not None:
        network.load_state_dict(best_state)
        if start_losses is not None and result.best_epoch > 0:
            result.start_edge = edge(window_losses(network, loss_fn, val_loader, device, precision), start_losses,
                                     lag=val_loader.windows.h - 1)
            if not result.start_edge > config.start_margin:  # within the margin: back to the start
                network.load_state_dict(start_state)
                result.best_epoch = 0
    else:
        result.best_epoch = len(result.history)
    network.eval()
    return result
