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
    (the known-future channels) over its horizon, and its series' statics."""

    time: np.ndarray  # (N, C) float32, aligned with the values
    future_from: int  # the first known-future channel of ``time`` (C: none)
    static_num: np.ndarray  # (S, S_n) float32
    static_cat: np.ndarray  # (S, S_c) int64


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
