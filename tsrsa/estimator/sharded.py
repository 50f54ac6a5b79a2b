"""Fitting from a panel stored in shards (:class:`tsrsa.data.shards.ParquetShards`).

Where a frame goes (``fit``, ``update``, ``cross_validate``), a folder of Parquet shards may go
instead. A process alone reads every file, and the call is the call on that frame. A process that
is one rank of several (a ``torchrun`` launch, a Ray or Spark launcher, or any initialised
``torch.distributed`` group) reads only its share of the files and answers for its share's
series: ``update`` and ``cross_validate`` act on them, and a neural forecaster's ``fit`` trains
one network data-parallel over all ranks, each rank drawing its part of every global batch from
its own windows (:class:`tsrsa.training.shards.ShardLoader`); every rank ends with the same
weights and with the state (look-back, scale) of its own series.

What a fit estimates per series (the scaler's location and scale, a statistical start's window)
is local to the series, so each rank computes it for its own. What a fit estimates once for the
whole panel (RSA's data start: AR roots and seasonal periods, pooled over a sample of at most 32
series; a statistical start's pooled coefficients; the dilations they imply) is estimated on rank
0's share and sent to every rank with the network's initial weights: the shares are a split of
the series by file, and rank 0's share stands for the panel as the sample of 32 series already
does in one process. Counts (training and validation windows) are summed over ranks, so the
budget (``max_epochs="auto"``, the steps of an epoch) is that of the whole panel.
"""
from __future__ import annotations

import os

import torch

from tsrsa.data.shards import ParquetShards
from tsrsa.training.ranks import Rank
from tsrsa.training.shards import counts_over_ranks


def group_place() -> tuple[int, int]:
    """(rank, world_size) of this process: from an initialised ``torch.distributed`` group, else
    from a launcher's RANK and WORLD_SIZE, else (0, 1)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return 0, 1


def shard_frame(shards: ParquetShards):
    """The frame this process reads from ``shards`` and the share it is ((rank, world_size), or
    None when alone and every file was read)."""
    rank, world = group_place()
    frame = shards.read(rank, world)
    return frame, ((rank, world) if world > 1 else None)


def check_shardable(estimator) -> None:
    """ValueError for what a sharded data-parallel fit cannot do yet (raised on every rank alike)."""
    if estimator.declared_covariates().active:
        raise ValueError("a fit from shards across several ranks takes the target only: covariates are encoded "
                         "from every series at once. Fit in one process (each rank reading every file), or "
                         "leave the covariate arguments unset")
    if estimator.conformal_windows is not None:
        raise ValueError("conformal intervals calibrate on the held-out windows of every series; a fit from shards "
                         "across several ranks sees only its share. Leave conformal_windows unset for the "
                         "sharded fit, then calibrate in one process")


def window_counts(n_train: int, n_val: int, rank: Rank) -> tuple[int, int]:
    """Training and validation windows of all ranks; ValueError on every rank when one has no training window."""
    train, val = zip(*counts_over_ranks((n_train, n_val), rank))  # each rank's, in rank order
    if min(train) == 0:
        raise ValueError(f"rank(s) {[r for r, n in enumerate(train) if n == 0]} of {rank.world_size} hold no "
                         f"training window in their share (training windows per rank: {list(train)}): write more, "
                         f"smaller files, or check that the series are long enough for input_size + h + val_size")
    return sum(train), sum(val)


def agree_with_rank0(estimates: tuple, rank: Rank) -> tuple:
    """``estimates`` (what the fit estimates once for the panel before the network is built: the network's
    configuration, the statistical start, the data-derived initialisation) as rank 0 estimated them, on every
    rank."""
    sent = [estimates]
    torch.distributed.broadcast_object_list(sent, src=0, group=rank.group)
    return sent[0]
