"""Per-series scaling fitted on each series' training part only."""
from __future__ import annotations

import numpy as np

SCALERS = ("standard", "robust", "minmax", "identity")


def check_scaler(scaler) -> None:
    if scaler is not None and scaler not in SCALERS:
        raise ValueError(f"scaler={scaler!r} is not supported; use None or one of {SCALERS}")


def series_statistics(
    values: np.ndarray, offsets: np.ndarray, fit_lengths: np.ndarray, scaler: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """Location and scale of each series from its first ``fit_lengths[i]`` values.

    Returns two float64 arrays of shape (S,). A series without spread gets scale 1, so a
    constant series maps to zeros instead of NaN.

    - "standard": mean and standard deviation;
    - "robust": median and interquartile range;
    - "minmax": minimum and range;
    - "identity" or None: 0 and 1.
    """
    check_scaler(scaler)
    n = len(offsets) - 1
    starts = offsets[:-1]
    if scaler in (None, "identity"):
        return np.zeros(n), np.ones(n)
    if scaler == "standard":
        lengths = np.diff(offsets)
        inside = np.arange(len(values)) < np.repeat(starts + fit_lengths, lengths)  # (N,)
        x = np.where(inside, values, 0.0)
        loc = np.add.reduceat(x, starts) / fit_lengths
        centred = np.where(inside, values - np.repeat(loc, lengths), 0.0)
        scale = np.sqrt(np.add.reduceat(centred**2, starts) / fit_lengths)
    else:
        loc, scale = np.empty(n), np.empty(n)
        for i, (a, m) in enumerate(zip(starts, fit_lengths)):
            part = values[a : a + m]
            if scaler == "robust":
                q1, loc[i], q3 = np.percentile(part, [25, 50, 75])
                scale[i] = q3 - q1
            else:
                loc[i] = part.min()
                scale[i] = part.max() - loc[i]
    tiny = scale <= 1e-12 * np.maximum(np.abs(loc), 1.0)
    return loc, np.where(tiny, 1.0, scale)


def scale_values(values: np.ndarray, offsets: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(values - loc) / scale per series, as one contiguous float32 array."""
    lengths = np.diff(offsets)
    out = (values - np.repeat(loc, lengths)) / np.repeat(scale, lengths)
    return np.ascontiguousarray(out, dtype=np.float32)
