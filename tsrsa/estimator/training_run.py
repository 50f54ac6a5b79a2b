"""One network's training run: here, in spawned workers, or as one rank of a launch.

:func:`train_member` picks the loaders for the windows (consecutive windows carry a state from window to
window; a rank holding only its share reads it through :class:`~tsrsa.training.shards.ShardLoader`) and
trains the network in place with :func:`tsrsa.training.train_network`, or hands it to spawned workers
(:func:`tsrsa.training.distributed.spawn_training`) and replays their epochs to the callbacks.
"""
from __future__ import annotations

import dataclasses

import torch

from tsrsa.data.windows import ConsecutiveWindows
from tsrsa.training import CarriedLoader, WindowLoader, train_network
from tsrsa.training.checkpoint import epoch_hook
from tsrsa.training.distributed import TrainingJob, rank_seed, spawn_training
from tsrsa.training.shards import ShardLoader


def train_member(network, loss_fn, train, val, *, placement, seed: int, rng, rank, config, trainer, batch_size: int,
                 epoch_callback=None, totals=None, member=None):
    """Train ``network`` in place on the windows ``train`` (and ``val``) with the
    :class:`~tsrsa.training.TrainingConfig` ``config``, where ``placement`` says, with the
    :class:`~tsrsa.estimator.trainer.Trainer` ``trainer``'s callbacks; returns the training result.
    ``totals``: the training and validation windows of all ranks when this rank holds only its share;
    ``member``: the ensemble's member it is, named in the records the callbacks see.

    Spawned workers cannot call back into this process: their epochs are replayed to the ``callbacks`` and
    ``epoch_callback`` once training ends.
    """
    carried = isinstance(train, ConsecutiveWindows)
    if trainer.checkpoint_dir is not None and placement.mode != "single":
        raise ValueError("the trainer's checkpoint_dir trains in one process on one device: leave its devices unset "
                         "(or 1) and its strategy 'auto' or 'single_device' with checkpoints")
    if carried and placement.mode != "single":
        raise ValueError("this model trains with the state carried from window to window, in one process on "
                         "one device: use the trainer's devices=1 (or leave devices unset) with strategy 'auto' or "
                         "'single_device'")
    if placement.mode == "spawn":
        threads = trainer.num_threads or max(1, torch.get_num_threads() // placement.world_size)
        job = TrainingJob(network, loss_fn, train, val, batch_size, int(trainer.inference_batch_size),
                          config, seed, placement.devices, threads, int(trainer.verbose))
        try:
            state, result = spawn_training(job)
        except FloatingPointError as error:
            network.load_state_dict(error.state_dict)
            network.to(placement.device)
            raise
        network.load_state_dict(state)
        network.to(placement.device)
        hook = epoch_hook(trainer.callbacks, epoch_callback, member)
        for record in result.history if hook is not None else ():
            hook(dict(record))
        return result
    device = placement.device
    network.to(device)
    loss_fn.to(device)
    if rank.world_size > 1:  # each rank its own dropout stream; windows still shuffled alike
        torch.manual_seed(rank_seed(seed, rank.rank))
        if rank.rank > 0:
            config = dataclasses.replace(config, verbose=0)  # one progress bar, rank 0's
    if carried:
        train_loader = CarriedLoader(train, shuffle=True, device=device, rank=rank)
        val_loader = CarriedLoader(val, shuffle=False, device=device, rank=rank) if val is not None else None
    elif totals is not None:  # each rank its own windows (tsrsa.training.shards)
        train_loader = ShardLoader(train, batch_size, shuffle=True, device=device, rank=rank,
                                   total_windows=totals[0], max_batches=config.batches_per_epoch)
        val_loader = None if val is None else ShardLoader(
            val, trainer.inference_batch_size, shuffle=False, device=device, rank=rank, total_windows=totals[1])
    else:
        train_loader = WindowLoader(train, batch_size, shuffle=True, device=device, rank=rank,
                                    max_batches=config.batches_per_epoch)
        val_loader = None
        if val is not None:
            val_loader = WindowLoader(val, trainer.inference_batch_size, shuffle=False, device=device, rank=rank,
                                      drop_uneven=False)
    return train_network(network, loss_fn, train_loader, val_loader, config, device=device, rng=rng,
                         rank=rank, on_epoch_end=epoch_hook(trainer.callbacks, epoch_callback, member))
