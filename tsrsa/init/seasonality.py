"""Dominant seasonal periods: a periodogram of the detrended series, checked against the ACF. In numpy,
each step as scipy's or statsmodels' function (tested against them): importing those costs more than a
quick fit's start."""
from __future__ import annotations

import warnings

import numpy as np

#: a peak must stand this many times above its spectral neighbourhood (natural periods, others)
NATURAL_SCORE, OTHER_SCORE = 8.0, 30.0
#: ... and this much when its second cycle lies beyond the autocorrelations we can check
UNCONFIRMED_SCORE = 100.0


def _natural_periods(freq) -> list[int]:
    if freq is None:
        return []
    from tsrsa.data.frequency import Frequency, parse_freq

    frequency = freq if isinstance(freq, Frequency) else parse_freq(freq)
    return frequency.natural_periods() if frequency is not None else []


def detrend_linear(y) -> np.ndarray:
    """y less its least-squares line (as ``scipy.signal.detrend(y, type="linear")``), in numpy."""
    y = np.asarray(y, dtype=np.float64).ravel()
    n = len(y)
    if n < 2:
        return y - y.mean() if n else y.copy()
    t = np.arange(n, dtype=np.float64) - (n - 1) / 2.0  # centred: the slope and level separate
    slope = float(t @ (y - y.mean())) / float(t @ t)
    return y - y.mean() - slope * t


def hann_periodogram(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frequencies, power spectral density and the windowed series of ``x`` under a periodic Hann window (as
    ``scipy.signal.periodogram(x, window="hann", detrend=False)``: one-sided, density scaling, fs = 1), in
    numpy."""
    n = len(x)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)  # scipy's get_window("hann", n): periodic
    windowed = x * window
    power = np.abs(np.fft.rfft(windowed)) ** 2 / float(window @ window)
    power[1 : n // 2 + (n % 2)] *= 2.0  # one-sided: every bin but 0 and (n even) Nyquist counts twice
    return np.fft.rfftfreq(n), power, windowed


def local_maxima(x: np.ndarray) -> np.ndarray:
    """Indices of x's local maxima, a flat top at its middle (rounded down), neither end (as
    ``scipy.signal.find_peaks(x)`` with no condition), in numpy."""
    x = np.asarray(x)
    change = np.flatnonzero(np.diff(x) != 0) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [len(x)])) - 1
    values = x[starts]
    inner = np.arange(1, len(starts) - 1)
    top = inner[(values[inner - 1] < values[inner]) & (values[inner + 1] < values[inner])]
    return (starts[top] + ends[top]) // 2


def acf(y, max_lag: int) -> np.ndarray:
    """Sample autocorrelation at lags 0..max_lag (biased normalisation; zeros for a constant).

    The autocovariances of the demeaned series by FFT, zero-padded past twice its length (as statsmodels'
    ``acovf(adjusted=False, demean=True, fft=True)``), in numpy.
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    n = len(y)
    z = y - y.mean()
    size = 1 << int(2 * n - 1).bit_length()  # a power of two at or past 2n - 1: no circular wrap
    spectrum = np.fft.rfft(z, size)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), size)[: max_lag + 1] / n
    return acov / acov[0] if acov[0] > 0 else np.zeros(max_lag + 1)


def pooled_acf(series, max_lag: int) -> np.ndarray:
    """Autocorrelation of several series at lags 0..max_lag: each series linearly detrended (as
    ``seasonal_periods`` reads it, whose strengths are pooled the same way), its ``acf``, and at
    each lag the median over the series long enough for it; NaN at lags no series reaches.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(480)
    >>> waves = [np.sin(2 * np.pi * t / 24), np.sin(2 * np.pi * t[:240] / 24), np.sin(2 * np.pi * t / 12)]
    >>> r = pooled_acf(waves, 24)
    >>> round(float(r[24]), 2)  # one season apart: the median of 456/480, 216/240 and 456/480 (biased)
    0.95
    >>> round(float(r[12]), 2)  # half a season: the opposite phase in two series of three, median -228/240
    -0.95
    """
    rows = np.full((len(series), max_lag + 1), np.nan)
    for i, y in enumerate(series):
        y = np.asarray(y, dtype=np.float64).ravel()
        if len(y) < 2:
            continue
        reach = min(max_lag, len(y) - 1)
        rows[i, : reach + 1] = acf(detrend_linear(y), reach)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a lag no series reaches: NaN
        return np.nanmedian(rows, axis=0) if len(series) else np.full(max_lag + 1, np.nan)


def _acf_peak(r: np.ndarray, lag: int, n: int) -> bool:
    """Whether r has a significant local peak within 10 % of ``lag``."""
    lo, hi = max(2, int(np.floor(0.9 * lag))), min(len(r) - 2, int(np.ceil(1.1 * lag)))
    if hi < lo:
        return False
    top = lo + int(np.argmax(r[lo : hi + 1]))
    if r[top] < r[top - 1] or r[top] < r[top + 1]:
        return False
    valley = r[max(1, top // 2) : top].min()
    return r[top] > 2.0 / np.sqrt(n) and r[top] - valley > 3.0 / np.sqrt(n)


def _peak_scores(power: np.ndarray, logf: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """Each peak's power over the median power of its neighbourhood (+-35 % in frequency, at
    most 100 bins each side), its own main lobe left out: a red-noise background does not make
    a peak."""
    lobe, reach = 3, 100
    scores = np.empty(len(peaks))
    for j, i in enumerate(peaks):
        lo, hi = np.searchsorted(logf, [logf[i] - 0.35, logf[i] + 0.35])
        lo, hi = max(lo, i - reach), min(hi, i + reach + 1)
        around = np.r_[max(lo, 0) : max(i - lobe, 0), min(i + lobe, len(power)) : min(hi, len(power))]
        if len(around) < 8:
            around = np.r_[max(i - 8 * lobe, 0) : max(i - lobe, 0), min(i + lobe, len(power)) : min(i + 8 * lobe, len(power))]
        scores[j] = power[i] / max(np.median(power[around]), 1e-300)
    return scores


def _refine(windowed: np.ndarray, f_lo: float, f_hi: float, points: int = 33) -> float:
    """Frequency of the largest |DFT|^2 of ``windowed`` on a fine grid in [f_lo, f_hi]."""
    grid = np.linspace(f_lo, f_hi, points)  # (G,)
    t = np.arange(len(windowed))
    dft = np.exp(-2j * np.pi * grid[:, None] * t[None, :]) @ windowed  # (G,)
    return float(grid[np.argmax(np.abs(dft))])


def seasonal_periods(y, k: int = 2, freq=None, *, return_strength: bool = False):
    """The ``k`` dominant seasonal periods of ``y``, in time steps, strongest first.

    1. Detrend (least-squares line); Hann-windowed periodogram.
    2. Rank its peaks by how far they stand above their spectral neighbourhood, so that the
       red-noise rise of persistent series at low frequencies does not pass for a season.
    3. Refine each peak's frequency between its neighbouring bins, round its period to whole
       steps, or snap it to a natural period of ``freq``
       within 5 % (24 or 168 for hourly data, 96 for 15-minute, 7 daily, 52 weekly, 12 monthly).
    4. Cross-check with the autocorrelation of the detrended series (or of its differences): a
       significant local ACF peak within 10 % of the period, and another at twice it where the
       series is long enough. A period that is not natural needs a peak 30x its background
       (100x when its second cycle cannot be checked); a natural one 8x.
    5. Drop periods within 5 % of a stronger one, and halves, thirds and quarters of another
       candidate (harmonics), unless they are natural periods.

    Periods longer than a third of the series, or shorter than 3 steps (the edge of the
    spectrum), are ignored.

    Parameters
    ----------
    y : array-like
        One series, no NaN.
    k : int, default 2
        Number of periods wanted (fewer are returned when the data show fewer).
    freq : str, int or tsrsa.data.Frequency, optional
        Frequency whose natural periods the estimates snap to.
    return_strength : bool, default False
        Also return each period's autocorrelation at its lag (detrended series).

    Returns
    -------
    list of int (and list of float with ``return_strength``)

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(24 * 7 * 8)
    >>> y = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 168) + 0.01 * t
    >>> seasonal_periods(y, k=2, freq="h")
    [24, 168]
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    if not np.all(np.isfinite(y)):
        raise ValueError("y has NaN or inf values; fill or drop them first")
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    n, longest = len(y), len(y) // 3
    empty = ([], []) if return_strength else []
    if longest < 2 or np.std(y) <= 1e-12 * max(1.0, np.abs(y).max()):
        return empty
    detrended = detrend_linear(y)
    freqs, power, windowed = hann_periodogram(detrended)
    freqs, power = freqs[1:], power[1:]
    peaks = local_maxima(power)
    peaks = peaks[(freqs[peaks] >= 1.0 / longest) & (freqs[peaks] <= 1.0 / 3)]  # 3 steps .. n / 3
    if peaks.size == 0:
        return empty
    scores = _peak_scores(power, np.log(freqs), peaks)
    ranked = np.argsort(-scores, kind="stable")
    levels, differences = acf(detrended, longest + 2), acf(np.diff(detrended), longest + 2)
    natural = [p for p in _natural_periods(freq) if 2 <= p <= longest]
    candidates: list[tuple[int, float]] = []  # (period, score), strongest first
    for j in ranked[: 40 * k]:
        score, i = scores[j], peaks[j]
        if score < NATURAL_SCORE:
            break
        rough = 1.0 / freqs[i]
        if score < OTHER_SCORE and not any(abs(rough - q) <= 0.1 * q for q in natural):
            continue  # too weak for anything but a natural period: skip before refining
        period = 1.0 / _refine(windowed, freqs[max(i - 1, 0)], freqs[min(i + 1, len(freqs) - 1)])
        lag = next((q for q in natural if abs(period - q) <= 0.05 * q), int(round(period)))
        if lag not in natural and score < OTHER_SCORE:
            continue
        if any(abs(lag - c) <= 0.05 * c for c, _ in candidates):
            continue
        confirming = [r for r in (levels, differences) if _acf_peak(r, lag, n)]
        if not confirming:
            continue
        if lag not in natural:
            if 2 * lag <= longest:
                if not any(_acf_peak(r, 2 * lag, n) for r in confirming):
                    continue
            elif score < UNCONFIRMED_SCORE:
                continue
        candidates.append((lag, score))

    def harmonic(lag: int, score: float) -> bool:
        return lag not in natural and any(
            abs(lag - c / m) <= 0.05 * c / m and s >= 0.25 * score for c, s in candidates for m in (2, 3, 4)
        )

    chosen = [lag for lag, score in candidates if not harmonic(lag, score)][:k]
    if return_strength:
        return chosen, [float(levels[lag]) for lag in chosen]
    return chosen
