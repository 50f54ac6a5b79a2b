"""A process's place in a data-parallel group: what the loader and the loop need of it.

Kept apart from :mod:`tsrsa.training.distributed` (which starts and joins process groups), so
that the batches and the loop, which only read a rank, import nothing that launches processes.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Rank:
    """This process's place in the data-parallel group (rank 0 of 1 when training alone)."""

    rank: int = 0
    world_size: int = 1
    group: object = None  # torch.distributed process group; None: the default one
    in_group: bool = False  # a member of a process group, also one of a single rank

    @property
    def data_parallel(self) -> bool:
        """Whether training goes through DistributedDataParallel: in a process group (a world of one
        included, so one device runs the multi-device code) or one of several ranks."""
        return self.in_group or self.world_size > 1

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over ranks in place (nothing to do alone)."""
        if self.data_parallel:
            torch.distributed.all_reduce(tensor, group=self.group)
        return tensor


#: training alone: rank 0 of 1
SINGLE = Rank()
