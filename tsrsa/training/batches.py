"""Batches of lazy windows as tensors on the training device."""
from __future__ import annotations

import numpy as np
import torch

from tsrsa.nn.covariates import CovariateBatch
from tsrsa.nn.streaming import CarriedBatch
from tsrsa.training.ranks import SINGLE, Rank


class WindowLoader:
    """Iterate over ``windows`` (a :class:`tsrsa.data.SlidingWindows`) in batches.

    No per-window Python work and no per-window copies: the series array is one tensor on the
    device (a view of the numpy array on the CPU); each batch is one small index array and one
    gather on the device. With a data-parallel ``rank`` each global batch of ``batch_size``
    windows is split into ``world_size`` near-equal parts and this rank gets its own. With
    ``max_batches`` a pass stops after that many batches: the first windows of each pass's order
    (with ``shuffle``, a fresh random subset every pass).
    """

    def __init__(self, windows, batch_size: int, *, shuffle: bool, device: torch.device, rank: Rank = SINGLE,
                 drop_uneven: bool = True, max_batches: int | None = None):
        self.windows = windows
        self.batch_size = int(batch_size)
        self.max_batches = None if max_batches is None else int(max_batches)  # per pass: the first of the order
        self.shuffle = shuffle
        self.device = torch.device(device)
        self.rank = rank
        self.drop_uneven = drop_uneven  # drop a last global batch that cannot give every rank a window
        self._values = None  # the series as a tensor on the device, made on first use
        self._span = None
        self._targets = None  # where the targets sit in a window's span, when not its last h steps
        self._covariates = None  # (time, static_num, static_cat, cycle phases, cycle rows) tensors on the device

    def __len__(self) -> int:
        return len(self._global_batches())

    @property
    def n_windows(self) -> int:
        """Windows per pass over all ranks (with ``drop_uneven``, a last global batch of fewer
        windows than ranks is left out: every rank must take part in every step)."""
        n = len(self.windows)
        if self.max_batches is not None:
            n = min(n, self.max_batches * self.batch_size)
        last = n % self.batch_size
        if self.drop_uneven and 0 < last < self.rank.world_size:
            return n - last
        return n

    def _global_batches(self) -> range:
        return range(0, self.n_windows, self.batch_size)

    def _tensors(self):
        if self._values is None:
            values = torch.from_numpy(np.ascontiguousarray(self.windows.values, dtype=np.float32))
            self._values = values.to(self.device)
            self._span = torch.arange(self.windows.input_size + self.windows.h, device=self.device)  # (L + h,)
            index = getattr(self.windows, "target_index", None)
            self._targets = None if index is None else torch.from_numpy(index).to(self.device)  # (N, h)
            source = getattr(self.windows, "covariates", None)
            if source is not None:
                arrays = (source.time, source.static_num, source.static_cat, source.cycle_phase, source.cycle_row)
                self._covariates = tuple(None if a is None else
                                         torch.from_numpy(np.ascontiguousarray(a)).to(self.device) for a in arrays)
        return self._values, self._span

    def _epoch_starts(self, rng) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Absolute start position of every window in this pass's order, as one tensor on the
        device (moved once per pass: no host-to-device copy, hence no sync, per step), and, for
        windows with covariates, each window's series."""
        n = len(self.windows)
        small = len(self.windows.values) < 2**31  # 4-byte positions: half the memory per window
        order = np.arange(n, dtype=np.int32 if small else np.int64)
        if self.shuffle and rng is not None:
            rng.shuffle(order)  # the permutation rng.permutation(n) gives, in place
        starts = np.empty(n, dtype=order.dtype)
        series = np.empty(n, dtype=np.int64) if self._covariates is not None else None
        for a in range(0, n, 1 << 20):  # in chunks: bounded temporaries however many windows
            starts[a : a + (1 << 20)], which = self.windows.locate(order[a : a + (1 << 20)])
            if series is not None:
                series[a : a + (1 << 20)] = which
        del order
        return torch.from_numpy(starts).to(self.device), None if series is None else torch.from_numpy(series).to(self.device)

    def shards(self, rng: np.random.Generator | None = None):
        """Yield (x (b, L), y (b, h) or (b, N, h), share) for this rank's part of each global batch, where
        ``share`` = b * world_size / (global batch size) (1.0 when training alone). With covariates, x is
        a :class:`~tsrsa.nn.covariates.CovariateBatch`."""
        values, span = self._tensors()
        starts, series = self._epoch_starts(rng)  # (n,) each
        n, world, rank = self.n_windows, self.rank.world_size, self.rank.rank
        L = self.windows.input_size
        for start in range(0, n, self.batch_size):
            stop, share = min(start + self.batch_size, n), 1.0
            if world > 1:  # this rank's near-equal part of the global batch
                size = stop - start
                a, b = start + (rank * size) // world, start + ((rank + 1) * size) // world
                if a == b:
                    continue  # a validation batch smaller than the group
                start, stop, share = a, b, (b - a) * world / size
            index = starts[start:stop, None] + span  # (b, L + h)
            block = values[index]  # (b, L + h), gathered on the device
            targets = block[:, L:] if self._targets is None else block[:, self._targets]  # (b, h) or (b, N, h)
            x = block[:, :L]
            if self._covariates is not None:
                x = self._with_covariates(x, index, series[start:stop])
            yield x, targets, share

    def _with_covariates(self, x, index, series) -> CovariateBatch:
        time, static_num, static_cat, phase, cycle_row = self._covariates
        L, first = self.windows.input_size, self.windows.covariates.future_from
        rows = time[index]  # (b, L + h, C)
        # the known-future values after the window (b, h, F), or after every token's end (b, N, h, F)
        after = rows[:, L:] if self._targets is None else rows[:, self._targets]
        return CovariateBatch(x, rows[:, :L] if time.size(1) else None,
                              after[..., first:] if first < time.size(1) else None,
                              static_num[series] if static_num.size(1) else None,
                              static_cat[series] if static_cat.size(1) else None,
                              None if phase is None else torch.stack([cycle_row[series], phase[index[:, 0]]], dim=1))

    def iterate(self, rng: np.random.Generator | None = None):
        """Yield (x (B, L), y (B, h)) float32 tensors; shuffled with ``rng`` when asked."""
        for x, y, _ in self.shards(rng):
            yield x, y

    @property
    def every_token(self) -> bool:
        """Whether the targets follow every token of a window, (b, N, h) (a streaming network's training
        windows), rather than the window's end, (b, h)."""
        return getattr(self.windows, "target_index", None) is not None

    def outputs(self, model, x, state=None):
        """(the network's outputs that this loader's targets are scored against, the state to pass to the
        next call): ``model(x)`` (b, h, Q), or with targets after every token ``model(x, tokens=True)``
        (b, N, h, Q); windows carry nothing, so the state stays None."""
        return (model(x, tokens=True) if self.every_token else model(x)), None


class CarriedLoader:
    """Iterate over :class:`tsrsa.data.ConsecutiveWindows` lane by lane, for training that carries the
    network's state from one window to the next: each step gives one window of each lane of a group
    (as a :class:`tsrsa.nn.CarriedBatch`, ``reset`` on a group's first window), the windows of a lane
    in order. The same interface as :class:`WindowLoader` for ``train_network``; one device only.

    The state is the caller's: ``outputs(model, batch, state)`` runs the network on ``batch`` from the
    state the previous step returned and returns the state to pass to the next one (see ``train_network``).
    """

    def __init__(self, windows, *, shuffle: bool, device: torch.device, rank: Rank = SINGLE):
        if rank.world_size > 1:
            raise ValueError("training that carries the state across windows runs on one device; use devices=1")
        self.windows, self.shuffle, self.device, self.rank = windows, shuffle, torch.device(device), rank
        self._values = None
        self._steps = sum(len(group) for group in windows.plan(None))

    def __len__(self) -> int:
        return self._steps

    @property
    def n_windows(self) -> int:
        return sum(group.size for group in self.windows.plan(None))

    def shards(self, rng: np.random.Generator | None = None):
        """Yield (CarriedBatch, y, 1.0) for every step of a pass."""
        if self._values is None:
            self._values = torch.from_numpy(np.ascontiguousarray(self.windows.values, dtype=np.float32)).to(self.device)
            self._span = torch.arange(self.windows.input_size + self.windows.h, device=self.device)
            index = self.windows.target_index
            self._targets = None if index is None else torch.from_numpy(index).to(self.device)
        L = self.windows.input_size
        for group in self.windows.plan(rng if self.shuffle else None):  # (K, n) starts
            for k, starts in enumerate(torch.from_numpy(group).to(self.device)):
                block = self._values[starts[:, None] + self._span]  # (n, L + h)
                targets = block[:, L:] if self._targets is None else block[:, self._targets]
                yield CarriedBatch(block[:, :L], k == 0), targets, 1.0

    def iterate(self, rng: np.random.Generator | None = None):
        for x, y, _ in self.shards(rng):
            yield x, y

    @property
    def every_token(self) -> bool:
        """Whether the targets follow every token of a window (training) rather than its end (validation)."""
        return self.windows.target_index is not None

    def outputs(self, model, batch: CarriedBatch, state=None):
        """(the network's outputs for ``batch``, continuing ``state`` (what this call returned for the
        previous step; a group's first window starts from the empty state): every token's (n, N, h, Q) for
        training targets, else the window's (n, h, Q); the state after, detached, for the next step)."""
        y, state = model(batch._replace(state=state), tokens=self.every_token)
        return y, state.detach()
