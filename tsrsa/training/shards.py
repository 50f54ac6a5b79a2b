"""Batches for data-parallel training where each rank holds only its own share of the series.

With the whole panel on every rank, :class:`~tsrsa.training.batches.WindowLoader` draws one
shuffled order of all windows and splits each global batch between the ranks. When each rank has
read only its share (:class:`tsrsa.data.shards.ParquetShards`), no rank can see the others'
windows, so :class:`ShardLoader` draws every step's part of the global batch from this rank's own
windows instead: the same near-equal part sizes and the same number of steps on every rank (one
pass's worth of global batches over the windows of all ranks, or ``max_batches``), each rank going
through a fresh shuffled order of its windows and starting another when it has used them up (a
rank with a smaller share sees its windows a little more often). The gradient averaged by DDP is
still that of a global batch of ``batch_size`` windows, only drawn stratified by rank.

For validation each rank scores all of its own windows; the loss is summed over ranks and divided
by the number of validation windows of all ranks.
"""
from __future__ import annotations

import numpy as np
import torch

from tsrsa.training.batches import WindowLoader
from tsrsa.training.ranks import Rank


def counts_over_ranks(counts: tuple[int, ...], rank: Rank) -> list[tuple[int, ...]]:
    """``counts`` of every rank of ``rank``'s group, in rank order (one collective for all of them)."""
    mine = torch.tensor([int(c) for c in counts], dtype=torch.int64)
    if not rank.data_parallel:
        return [tuple(int(c) for c in mine)]
    every = [torch.zeros_like(mine) for _ in range(rank.world_size)]
    torch.distributed.all_gather(every, mine, group=rank.group)
    return [tuple(int(c) for c in t) for t in every]


class ShardLoader(WindowLoader):
    """This rank's part of every global batch, drawn from its own ``windows`` (see the module docstring).

    ``total_windows``: the windows of all ranks together (summed from :func:`counts_over_ranks`). Training
    (``shuffle=True``) runs ``len(self)`` steps per pass; validation (``shuffle=False``) reads this
    rank's windows once, in order, ``batch_size`` at a time.
    """

    def __init__(self, windows, batch_size: int, *, shuffle: bool, device: torch.device, rank: Rank,
                 total_windows: int, max_batches: int | None = None):
        super().__init__(windows, batch_size, shuffle=shuffle, device=device, rank=rank, drop_uneven=False,
                         max_batches=max_batches)
        self.total_windows = int(total_windows)
        world, r = rank.world_size, rank.rank
        self.part = (r + 1) * self.batch_size // world - r * self.batch_size // world  # of each global batch
        if shuffle and (self.part == 0 or len(windows) == 0):
            raise ValueError(f"rank {r} of {world} has {len(windows)} training window(s) and a part of "
                             f"{self.part} of each batch of {self.batch_size}: every rank needs windows and "
                             f"batch_size >= the number of ranks")

    def __len__(self) -> int:
        if not self.shuffle:
            return -(-len(self.windows) // self.batch_size)
        n = self.total_windows
        if self.max_batches is not None:
            n = min(n, self.max_batches * self.batch_size)
        return max(1, -(-n // self.batch_size))

    @property
    def n_windows(self) -> int:
        """Windows per pass over all ranks: what the summed loss is divided by."""
        return len(self) * self.batch_size if self.shuffle else self.total_windows

    def _order(self, rng, count: int) -> np.ndarray:
        """``count`` window positions: shuffled passes over this rank's windows, one after another."""
        n = len(self.windows)
        local = np.random.default_rng([int(rng.integers(2**62)), self.rank.rank])  # same draw on every rank
        parts, have = [], 0
        while have < count:
            part = local.permutation(n)[: count - have]
            parts.append(part)
            have += len(part)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def shards(self, rng: np.random.Generator | None = None):
        """Yield (x, y, share) for each step: this rank's part of the global batch, ``share`` its
        fraction of the global batch times the world size (as WindowLoader's)."""
        values, span = self._tensors()
        L = self.windows.input_size
        if self.shuffle:
            if rng is None:
                raise ValueError("a training ShardLoader draws its windows with a random generator: pass rng")
            order = self._order(rng, len(self) * self.part)
            size, share = self.part, self.part * self.rank.world_size / self.batch_size
        else:
            order, size, share = np.arange(len(self.windows)), self.batch_size, 1.0
        if len(order) == 0:
            return
        starts, _ = self.windows.locate(order)
        starts = torch.from_numpy(np.asarray(starts, dtype=np.int64)).to(self.device)
        for a in range(0, len(order), max(size, 1)):
            index = starts[a : a + size, None] + span  # (b, L + h)
            block = values[index]
            targets = block[:, L:] if self._targets is None else block[:, self._targets]
            yield block[:, :L], targets, share
