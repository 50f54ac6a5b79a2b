"""Power series in numpy, batched over rows: products, and division by a sparse polynomial.

The ETS and ARIMA starts (:mod:`tsrsa.start.ets`, :mod:`tsrsa.start.arima`) write a
model's one-step errors and their responses to its initial state as power series, ratios of polynomials
with a few nonzero powers (1, 2, m, m + 1, m + 2 for a season of m steps), over the steps of a series:
every candidate parameter vector of every form is a row, and one call computes them all.
"""
from __future__ import annotations

import numpy as np


def series_product(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """(..., n): the first n coefficients of the products of the power series ``a`` (..., la) and ``b``
    (broadcast against a), by FFT."""
    size = 1 << max(min(a.shape[-1], n) + min(b.shape[-1], n) - 2, 1).bit_length()
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.fft.irfft(np.fft.rfft(a[..., :n], size) * np.fft.rfft(b[..., :n], size), size)[..., :n]
    if out.shape[-1] < n:
        out = np.concatenate([out, np.zeros((*out.shape[:-1], n - out.shape[-1]))], axis=-1)
    return out


def polynomial_product(p: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """(M, n): the first n coefficients of ``p b``, p (M, lp) a polynomial of few nonzero powers (the
    models' are sparse: powers 0-2 and m to m + 2), b (M, lb) a power series: a sum of shifted copies of b."""
    out = np.zeros((len(b), n))
    for j in np.flatnonzero(np.any(p != 0, axis=0)):
        if j < n:
            width = min(b.shape[1], n - j)
            out[:, j:j + width] += p[:, j:j + 1] * b[:, :width]
    return out


#: :func:`sparse_filter` runs its recursion from this many rows; fewer, it inverts by Newton's iteration (on 24 to
#: 60 rows of a few hundred steps Newton's FFTs were the faster, on 700 rows the recursion, 3.7 times)
RECURSION_ROWS = 128


def series_inverse(p: np.ndarray, n: int) -> np.ndarray:
    """(M, n): the first n coefficients of ``1 / p`` (p (M, lp) a sparse polynomial, ``p[:, 0] == 1``), by
    Newton's iteration ``b <- b (2 - p b)``, which doubles the coefficients known."""
    b, known = np.ones((len(p), 1)), 1
    with np.errstate(over="ignore", invalid="ignore"):
        while known < n:
            known = min(2 * known, n)
            correction = -polynomial_product(p, b, known)
            correction[:, 0] += 2.0
            b = series_product(b, correction, known)
    return b


def sparse_filter(p: np.ndarray, inputs: np.ndarray) -> np.ndarray:
    """(M, C, n): ``inputs`` (M, C, n) divided by the polynomial p (M, lp), ``p[:, 0] == 1``, as power series.
    Many rows: the recursion ``out_t = in_t - sum_j p_j out_(t-j)`` over p's few nonzero powers j >= 1 (the
    models' polynomials are sparse: powers 1-2 and m to m + 2), every row and channel at once, n steps;
    few rows: ``1 / p`` by :func:`series_inverse` and a product by FFT (fewer, larger operations)."""
    n = inputs.shape[2]
    if len(p) < RECURSION_ROWS:
        return series_product(series_inverse(p, n)[:, None, :], inputs, n)
    taps = np.flatnonzero(np.any(p[:, 1:] != 0, axis=0)) + 1
    coefficients = p[:, taps]  # (M, J)
    out = np.array(inputs, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, n):
            reach = int(np.searchsorted(taps, t, side="right"))  # the taps that look back within the series
            if reach:
                out[:, :, t] -= np.einsum("mj,mcj->mc", coefficients[:, :reach], out[:, :, t - taps[:reach]])
    return out
