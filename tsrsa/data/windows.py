"""Lazy sliding windows over a concatenated array: index arithmetic, no per-window copies.

A window is ``input_size`` inputs followed by ``h`` targets. Windows are addressed by a global
index; the values of a batch are gathered in one fancy-indexing step, so memory grows with
the number of points, never with the number of windows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class WindowSource:
    """Covariates beside a window's values (``SlidingWindows.covariates``): a window starting at
    position p reads ``time[p : p + L]`` over its look-back and ``time[p + L : p + L + h, future_from:]``
    (the known-future channels) over its horizon, its series' statics and, for a learned cycle
    (:mod:`tsrsa.nn.cycle`), its series and the phase ``cycle[p]`` of its first step."""

    time: np.ndarray  # (N, C) float32, aligned with the values
    future_from: int  # the first known-future channel of ``time`` (C: none)
    static_num: np.ndarray  # (S, S_n) float32
    static_cat: np.ndarray  # (S, S_c) int64
    cycle_phase: np.ndarray | None = None  # (N,) int64 each value's phase in a learned cycle (None: no cycle)
    cycle_row: np.ndarray | None = None  # (S,) int64 each series' row of the cycle's table (-1: the mean row)


class SlidingWindows:
    """All windows of series i whose first value sits at a position in ``[lo[i], hi[i]]``.

    Parameters
    ----------
    values : ndarray, shape (N,)
        Series after series (float32 for training).
    lo, hi : ndarray of int, shape (S,)
        First and last allowed absolute start position per series; hi < lo means none.
    input_size, h : int
        Window layout: ``input_size`` inputs, then ``h`` targets.
    target_stride : int, optional
        None: the targets are the ``h`` steps after the inputs, (B, h). k: after every k-th input
        step, the ``h`` steps that follow it, (B, input_size // k, h) (every token's targets, for
        networks that forecast from each token of ``k`` steps); ``input_size`` must be a multiple of k.
    """

    def __init__(self, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, input_size: int, h: int,
                 target_stride: int | None = None):
        self.values = values
        self.lo = np.asarray(lo, dtype=np.int64)
        counts = np.maximum(np.asarray(hi, dtype=np.int64) - self.lo + 1, 0)  # (S,)
        self.cum = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)  # (S + 1,)
        self.input_size = int(input_size)
        self.h = int(h)
        #: covariates the windows carry (a WindowSource; None: the values alone)
        self.covariates: WindowSource | None = None
        self._span = np.arange(self.input_size + self.h, dtype=np.int64)  # (L + h,)
        #: positions of the targets within a window's span: None for the last h, else (N, h)
        self.target_index = None
        if target_stride is not None:
            if self.input_size % target_stride:
                raise ValueError(f"input_size={input_size} must be a multiple of target_stride={target_stride}")
            ends = np.arange(target_stride, self.input_size + 1, target_stride, dtype=np.int64)  # (N,)
            self.target_index = ends[:, None] + np.arange(self.h, dtype=np.int64)[None, :]  # (N, h)

    def __len__(self) -> int:
        return int(self.cum[-1])

    def locate(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Absolute start position and series number of each global window index."""
        series = np.searchsorted(self.cum, index, side="right") - 1  # (B,)
        return self.lo[series] + (index - self.cum[series]), series

    def batch(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs (B, input_size) and targets (B, h), or (B, N, h) with ``target_stride``, of the given windows."""
        starts, _ = self.locate(np.asarray(index, dtype=np.int64))
        block = self.values[starts[:, None] + self._span[None, :]]  # (B, L + h)
        if self.target_index is not None:
            return block[:, : self.input_size], block[:, self.target_index]
        return block[:, : self.input_size], block[:, self.input_size :]


def training_windows(values, offsets, fit_lengths, input_size: int, h: int,
                     target_stride: int | None = None) -> SlidingWindows:
    """Windows lying wholly inside each series' first ``fit_lengths[i]`` values."""
    lo = offsets[:-1]
    return SlidingWindows(values, lo, lo + fit_lengths - (input_size + h), input_size, h, target_stride)


def validation_windows(values, offsets, fit_lengths, input_size: int, h: int) -> SlidingWindows:
    """Windows whose targets lie wholly in each series' part after ``fit_lengths[i]``.

    Their inputs may reach back into the training part.
    """
    lo = offsets[:-1] + fit_lengths - input_size
    return SlidingWindows(values, lo, offsets[1:] - (input_size + h), input_size, h)


class ConsecutiveWindows:
    """Windows that follow each other in time, for training that carries a state from one window to
    the next (Transformer-XL style): each *lane* is a run of windows of one series, window k+1
    starting where window k ends; lanes of equal length are read side by side in groups of at most
    ``n_lanes``, one window of each per step, so a lane's state after window k is the start of its
    window k + 1. A series' windows make lanes of ``lane_length`` (enough for every lane of a pass to
    fill ``n_lanes``, at least ``MIN_LANE`` windows, at most a series' windows) and one shorter lane
    of the rest: every window is read once per pass.

    Parameters
    ----------
    values : ndarray, shape (N,)
        Series after series.
    lo, end : ndarray of int, shape (S,)
        Per series: the first position a window may start at, and the position after the last value
        its targets may reach.
    input_size, h : int
        A window's steps, and the target steps after each token (with ``target_stride``) or after
        the window.
    target_stride : int, optional
        As :class:`SlidingWindows`: every ``target_stride`` steps' targets (B, input_size // k, h).
    n_lanes : int
        Lanes read side by side (the batch size).
    """

    def __init__(self, values: np.ndarray, lo: np.ndarray, end: np.ndarray, input_size: int, h: int,
                 target_stride: int | None = None, n_lanes: int = 32):
        self.values = values
        self.lo, self.end = np.asarray(lo, dtype=np.int64), np.asarray(end, dtype=np.int64)
        self.input_size, self.h, self.n_lanes = int(input_size), int(h), int(n_lanes)
        self.covariates: WindowSource | None = None
        self.target_index = SlidingWindows(values, self.lo[:1], self.lo[:1], input_size, h, target_stride).target_index
        span = np.maximum(self.end - self.lo - self.h, 0)  # (S,) steps the windows' inputs may cover
        self.windows_per_series = span // self.input_size  # (S,) whatever the phase
        total, longest = int(self.windows_per_series.sum()), int(self.windows_per_series.max(initial=0))
        self.lane_length = max(1, min(max(self.MIN_LANE, total // max(self.n_lanes, 1)), longest))

    #: the fewest windows a lane carries its state through (unless its series has fewer)
    MIN_LANE = 8

    def __len__(self) -> int:
        """Windows per pass."""
        return int(self.windows_per_series.sum())

    def plan(self, rng: np.random.Generator | None = None) -> list[np.ndarray]:
        """One pass: a list of groups, each (K, n) start positions: n lanes of K consecutive windows.
        With ``rng`` each series' windows start at a random phase (as many windows whatever it is) and
        the lanes and groups are shuffled; without, phase 0 and series order."""
        L, K = self.input_size, self.lane_length
        by_length: dict[int, list] = {}
        for i, (a, n) in enumerate(zip(self.lo, self.windows_per_series)):
            n, phase = int(n), 0
            slack = int(self.end[i] - a - self.h) - n * L  # steps the n windows leave over
            if rng is not None and slack > 0:
                phase = int(rng.integers(0, min(L, slack + 1)))
            starts = a + phase + L * np.arange(n, dtype=np.int64)
            for k in range(0, n, K):
                lane = starts[k:k + K]
                by_length.setdefault(len(lane), []).append(lane)
        groups = []
        for length in sorted(by_length):
            lanes = by_length[length]
            if rng is not None:
                rng.shuffle(lanes)
            groups += [np.stack(lanes[g:g + self.n_lanes], axis=1) for g in range(0, len(lanes), self.n_lanes)]
        if rng is not None:
            rng.shuffle(groups)
        return groups


def consecutive_training_windows(values, offsets, fit_lengths, input_size: int, h: int, target_stride: int | None,
                                 n_lanes: int) -> ConsecutiveWindows:
    """Consecutive windows lying wholly inside each series' first ``fit_lengths[i]`` values."""
    lo = offsets[:-1]
    return ConsecutiveWindows(values, lo, lo + fit_lengths, input_size, h, target_stride, n_lanes)


def consecutive_validation_windows(values, offsets, fit_lengths, input_size: int, h: int) -> ConsecutiveWindows:
    """One lane per series over its held-out part: consecutive windows whose targets lie after
    ``fit_lengths[i]`` (the first window's inputs may reach back into the training part)."""
    lo = offsets[:-1] + fit_lengths - input_size
    windows = ConsecutiveWindows(values, lo, offsets[1:], input_size, h, None, n_lanes=len(lo))
    windows.lane_length = max(1, int(windows.windows_per_series.max(initial=0)))  # a series is one lane
    return windows
