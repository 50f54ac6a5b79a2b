"""Repeatable randomness that leaves the caller's global random state as it was."""
from __future__ import annotations

import contextlib

import numpy as np
import torch


def resolve_seed(random_state) -> int:
    """An integer seed: ``random_state`` itself, or fresh OS entropy when it is None."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer)):
        raise TypeError(f"random_state must be None or a non-negative int, got {random_state!r}")
    if random_state < 0:
        raise ValueError(f"random_state={random_state} must be a non-negative int")
    return int(random_state)


@contextlib.contextmanager
def seeded(seed: int, device: torch.device | None = None):
    """Inside the block torch's generators start from ``seed``; outside nothing changed.

    Weight initialisation and dropout draw from torch's global generators, so they are
    seeded here under ``torch.random.fork_rng``, which restores the CPU (and the used CUDA
    device's) state on exit. Window shuffling uses its own numpy Generator.
    """
    cuda = [device.index if device.index is not None else 0] if device is not None and device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed)
        yield np.random.default_rng(seed)
