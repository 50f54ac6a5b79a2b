"""Filling missing values inside each series of a concatenated array, vectorised.

``values`` holds the series one after another; series i is ``values[offsets[i]:offsets[i+1]]``.
No fill crosses a series boundary.
"""
from __future__ import annotations

import numpy as np

FILL_METHODS = ("ffill", "interpolate", "zero")


def _segment_bounds(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.diff(offsets)
    return np.repeat(offsets[:-1], lengths), np.repeat(offsets[1:], lengths)  # (n,), (n,)


def _previous_valid(valid: np.ndarray, seg_start: np.ndarray) -> np.ndarray:
    """Index of the last valid value at or before each position in its series, or -1."""
    idx = np.arange(len(valid))
    prev = np.maximum.accumulate(np.where(valid, idx, -1))
    return np.where(prev >= seg_start, prev, -1)


def _next_valid(valid: np.ndarray, seg_end: np.ndarray) -> np.ndarray:
    """Index of the first valid value at or after each position in its series, or -1."""
    n = len(valid)
    idx = np.arange(n)
    nxt = np.minimum.accumulate(np.where(valid, idx, n)[::-1])[::-1]
    return np.where(nxt < seg_end, nxt, -1)


def fill_missing(values: np.ndarray, offsets: np.ndarray, method: str) -> np.ndarray:
    """Return a copy of ``values`` with NaN replaced within each series.

    - "ffill": the last earlier value; leading NaN take the first later value.
    - "interpolate": linear in the step index between the neighbouring values; NaN at the
      ends of a series take the nearest value.
    - "zero": 0.

    A series with no value at all stays NaN (the caller reports it).
    """
    if method not in FILL_METHODS:
        raise ValueError(f"fill={method!r} is not one of {FILL_METHODS}")
    missing = np.isnan(values)
    if not missing.any():
        return values.copy()
    if method == "zero":
        return np.where(missing, 0.0, values)
    valid = ~missing
    seg_start, seg_end = _segment_bounds(offsets)
    prev = _previous_valid(valid, seg_start)
    nxt = _next_valid(valid, seg_end)
    out = values.copy()
    if method == "ffill":
        src = np.where(prev >= 0, prev, nxt)
        ok = missing & (src >= 0)
        out[ok] = values[src[ok]]
        return out
    both = missing & (prev >= 0) & (nxt >= 0)
    idx = np.arange(len(values))
    p, q = prev[both], nxt[both]
    weight = (idx[both] - p) / (q - p)
    out[both] = values[p] + weight * (values[q] - values[p])
    only_prev = missing & (prev >= 0) & (nxt < 0)
    only_next = missing & (prev < 0) & (nxt >= 0)
    out[only_prev] = values[prev[only_prev]]
    out[only_next] = values[nxt[only_next]]
    return out
