"""Characteristic roots of autoregressive fits: the recurrences a linear RNN would carry.

The characteristic roots of y_t = a_1 y_{t-1} + ... + a_p y_{t-p} + e_t are the eigenvalues of
its companion matrix, i.e. the inverses of the lag-polynomial roots that statsmodels reports.
For y_t = 1.5 y_{t-1} - 0.9 y_{t-2} + e_t they are 0.75 +- 0.581i: modulus 0.949, period 9.53.
"""
from __future__ import annotations

import warnings

import numpy as np


def default_max_lag(n: int) -> int:
    """An AR order ceiling that grows slowly with the series: 10 log10(n), at most n / 4 and 48."""
    return int(max(1, min(10 * np.log10(max(n, 2)), n // 4, 48)))


def companion_roots(coefficients) -> np.ndarray:
    """Eigenvalues of the companion matrix of AR coefficients a_1..a_p, by decreasing modulus."""
    a = np.asarray(coefficients, dtype=np.float64)
    if a.size == 0:
        return np.zeros(0, dtype=np.complex128)
    roots = np.roots(np.concatenate([[1.0], -a]))  # z^p - a_1 z^{p-1} - ... - a_p
    return roots[np.argsort(-np.abs(roots), kind="stable")].astype(np.complex128)


def _check_series(y, what: str = "y") -> np.ndarray:
    y = np.asarray(y, dtype=np.float64).ravel()
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{what} has NaN or inf values; fill or drop them first")
    if len(y) < 8:
        raise ValueError(f"{what} has {len(y)} values; an AR fit needs at least 8")
    if np.std(y) <= 1e-12 * max(1.0, np.abs(y).max()):
        raise ValueError(f"{what} is constant: it has no autoregressive structure")
    return y


def ar_roots(y, max_lag: int | None = None, ic: str = "bic") -> np.ndarray:
    """Characteristic roots (complex, per time step) of an AR model fitted to ``y``.

    The order is chosen by the information criterion over 0..max_lag with statsmodels'
    ``ar_select_order``; the model is then fitted by ``AutoReg`` (OLS, with a constant).

    Parameters
    ----------
    y : array-like
        One series, no NaN.
    max_lag : int, optional
        Highest order tried (default ``default_max_lag(len(y))``).
    ic : {"bic", "aic", "hqic"}, default "bic"

    Returns
    -------
    ndarray of complex
        Roots by decreasing modulus; empty when the chosen order is 0.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.zeros(2000)
    >>> for t in range(2, 2000):
    ...     y[t] = 1.5 * y[t - 1] - 0.9 * y[t - 2] + rng.standard_normal()
    >>> roots = ar_roots(y)
    >>> round(float(abs(roots[0])), 2), round(float(2 * np.pi / abs(np.angle(roots[0]))), 1)
    (0.95, 9.5)
    """
    from statsmodels.tsa.ar_model import AutoReg, ar_select_order

    y = _check_series(y)
    if ic not in ("bic", "aic", "hqic"):
        raise ValueError(f"ic={ic!r} is not one of 'bic', 'aic', 'hqic'")
    max_lag = default_max_lag(len(y)) if max_lag is None else int(max_lag)
    if max_lag < 1:
        raise ValueError(f"max_lag={max_lag} must be >= 1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lags = ar_select_order(y, maxlag=max_lag, ic=ic, trend="c").ar_lags
        if not lags:
            return np.zeros(0, dtype=np.complex128)
        fit = AutoReg(y, lags=lags, trend="c").fit()
    roots = 1.0 / np.asarray(fit.roots, dtype=np.complex128)
    return roots[np.argsort(-np.abs(roots), kind="stable")]


def autocovariances(series: list[np.ndarray], max_lag: int) -> np.ndarray:
    """Mean autocovariance (lags 0..max_lag) of standardised series, weighted by length.

    Each series' biased autocovariance (divided by n, as Yule-Walker wants; statsmodels' ``acovf`` with
    ``adjusted=False, demean=False``) by direct sums, one product per lag: ``fit`` asks for a few dozen lags.
    """
    total = np.zeros(max_lag + 1)
    weight = 0.0
    for y in series:
        z = (y - y.mean()) / y.std()
        n = len(z)
        total += [float(z[: n - k] @ z[k:]) if k < n else 0.0 for k in range(max_lag + 1)]
        weight += n
    return total / weight


def levinson_durbin(acov: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """The Yule-Walker fits of every order 1..order from autocovariances (Levinson-Durbin), as statsmodels'
    ``levinson_durbin(acov, nlags=order, isacov=True)`` gives them: ``phi[1:p+1, p]`` are AR(p)'s
    coefficients and ``sigma[p]`` its innovation variance (NaN or <= 0 once the recursion loses positive
    definiteness)."""
    acov = np.asarray(acov, dtype=np.float64)
    phi = np.zeros((order + 1, order + 1))
    sigma = np.zeros(order + 1)
    sigma[0] = acov[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(1, order + 1):
            previous = phi[1:k, k - 1]
            phi[k, k] = (acov[k] - previous @ acov[1:k][::-1]) / sigma[k - 1]
            phi[1:k, k] = previous - phi[k, k] * previous[::-1]
            sigma[k] = sigma[k - 1] * (1.0 - phi[k, k] ** 2)
    return phi, sigma


def pooled_ar_roots(series: list[np.ndarray], max_lag: int | None = None, ic: str = "bic") -> np.ndarray:
    """Roots of one AR model shared by several series: Yule-Walker on their pooled autocovariance.

    Each series is standardised and their autocovariances are averaged (weighted by length);
    one Levinson-Durbin recursion on that average (``levinson_durbin``, as statsmodels') gives the
    Yule-Walker fits of every order 1..max_lag, and the information criterion picks one
    (n = all observations; order 0 when none beats white noise). Fast for many series.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.zeros(4000)
    >>> for t in range(2, 4000):
    ...     y[t] = 1.5 * y[t - 1] - 0.9 * y[t - 2] + rng.standard_normal()
    >>> roots = pooled_ar_roots([y[:2000], y[2000:]])
    >>> round(float(abs(roots[0])), 2), round(float(2 * np.pi / abs(np.angle(roots[0]))), 1)
    (0.95, 9.5)
    """
    series = [_check_series(y, f"series {i}") for i, y in enumerate(series)]
    if ic not in ("bic", "aic", "hqic"):
        raise ValueError(f"ic={ic!r} is not one of 'bic', 'aic', 'hqic'")
    n = sum(len(y) for y in series)
    max_lag = default_max_lag(min(len(y) for y in series)) if max_lag is None else int(max_lag)
    if max_lag < 1:
        raise ValueError(f"max_lag={max_lag} must be >= 1")
    acov = autocovariances(series, max_lag)
    phi, sigma = levinson_durbin(acov, max_lag)  # phi[1:p+1, p]: AR(p); sigma[p]: its variance
    penalty = {"bic": np.log(n), "aic": 2.0, "hqic": 2.0 * np.log(np.log(n))}[ic]
    scores = [n * np.log(acov[0])]  # order 0: white noise
    for p in range(1, max_lag + 1):
        if not sigma[p] > 0:  # the recursion lost positive definiteness: no higher order
            break
        scores.append(n * np.log(sigma[p]) + penalty * p)
    order = int(np.argmin(scores))
    return companion_roots(phi[1 : order + 1, order])
