"""Per-series scaling fitted on each series' training part only, and the range a network reads.

Statistics are computed in float64 without overflow (a series at 1e300 scales like one at 1); the
scaled values enter a float32 network, whose instance normalisation and layer norms square them, so
every scaled value must lie within ``MAX_SCALED`` (:func:`check_scaled` refuses the rest, naming the
series, the timestamp and the fix).
"""
from __future__ import annotations

import numpy as np

from tsrsa.data.validation import format_id

SCALERS = ("standard", "robust", "minmax", "identity")
#: the largest magnitude of a scaled value a float32 network reads: squares of values up to
#: sqrt(float32 max) = 1.8e19 stay finite, and a factor of ten is kept for sums over a window
MAX_SCALED = 1e18
#: series whose values reach this magnitude get their moments computed on a rescaled copy (their
#: squares would overflow float64)
_LARGE = 1e100


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
        size = np.maximum.reduceat(np.abs(x), starts) if len(x) else np.zeros(n)  # (S,) largest magnitude
        unit = np.where(size > _LARGE, size, 1.0)  # (S,) moments of huge series on a rescaled copy
        x = x / np.repeat(unit, lengths)
        loc = np.add.reduceat(x, starts) / fit_lengths
        centred = np.where(inside, x - np.repeat(loc, lengths), 0.0)
        scale = np.sqrt(np.add.reduceat(centred**2, starts) / fit_lengths) * unit
        loc = loc * unit
    else:
        loc, scale = np.empty(n), np.empty(n)
        with np.errstate(over="ignore"):  # a range beyond float64 is reported by check_scaled
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
    return np.ascontiguousarray(_scaled64(values, offsets, loc, scale), dtype=np.float32)


def _scaled64(values, offsets, loc, scale) -> np.ndarray:
    lengths = np.diff(offsets)
    with np.errstate(over="ignore", invalid="ignore"):
        return (values - np.repeat(loc, lengths)) / np.repeat(scale, lengths)


def mean_and_spread(values: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation of a 1-D float64 array, without overflow for huge values."""
    size = float(np.max(np.abs(values))) if values.size else 0.0
    unit = size if size > _LARGE else 1.0
    x = values / unit
    return float(np.mean(x)) * unit, float(np.std(x)) * unit


def check_scaled(panel, loc: np.ndarray, scale: np.ndarray, *, statistics: str, fix: str) -> np.ndarray:
    """``panel``'s values scaled per series by ``loc``/``scale`` (S,), as float32 (N,); a ValueError
    naming the first series and timestamp whose statistics are not finite or whose scaled value lies
    beyond ``MAX_SCALED``.

    ``statistics`` says where the statistics come from (for the message); ``fix`` how to repair it.
    """
    bad_stats = np.flatnonzero(~(np.isfinite(loc) & np.isfinite(scale)))
    if bad_stats.size:
        i = int(bad_stats[0])
        series = panel.series(i)
        raise ValueError(
            f"series {format_id(panel.ids[i])} cannot be scaled: its values (up to {np.max(np.abs(series)):.3g} in "
            f"magnitude) overflow float64 in {statistics}; divide the series by a constant before fitting")
    scaled = _scaled64(panel.values, panel.offsets, loc, scale)  # (N,) float64
    wrong = np.flatnonzero(~(np.abs(scaled) <= MAX_SCALED))
    if wrong.size:
        row = int(wrong[0])
        stamps, series = panel.stamps_at([row])
        i = int(series[0])
        more = f" (and {wrong.size - 1} more)" if wrong.size > 1 else ""
        raise ValueError(
            f"series {format_id(panel.ids[i])} has the value {panel.values[row]:.6g} at {stamps[0]}{more}: scaled by "
            f"{statistics} (location {loc[i]:.6g}, spread {scale[i]:.6g}) it becomes {scaled[row]:.3g}, beyond "
            f"the +-{MAX_SCALED:.0e} a float32 network computes with; {fix}")
    return np.ascontiguousarray(scaled, dtype=np.float32)
