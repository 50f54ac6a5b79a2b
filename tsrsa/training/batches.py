"""Batches of lazy windows as tensors on the training device."""
from __future__ import annotations

import math

import numpy as np
import torch


class WindowLoader:
    """Iterate over ``windows`` (a :class:`tsrsa.data.SlidingWindows`) in batches.

    No per-window Python work: each batch is one index array and one gather.
    """

    def __init__(self, windows, batch_size: int, *, shuffle: bool, device: torch.device):
        self.windows = windows
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.device = device

    def __len__(self) -> int:
        return math.ceil(len(self.windows) / self.batch_size)

    @property
    def n_windows(self) -> int:
        return len(self.windows)

    def iterate(self, rng: np.random.Generator | None = None):
        """Yield (x (B, L), y (B, h)) float32 tensors; shuffled with ``rng`` when asked."""
        n = len(self.windows)
        order = rng.permutation(n) if self.shuffle and rng is not None else np.arange(n)
        non_blocking = self.device.type == "cuda"
        for start in range(0, n, self.batch_size):
            x, y = self.windows.batch(order[start : start + self.batch_size])
            yield (
                torch.from_numpy(x).to(self.device, non_blocking=non_blocking),
                torch.from_numpy(y).to(self.device, non_blocking=non_blocking),
            )
