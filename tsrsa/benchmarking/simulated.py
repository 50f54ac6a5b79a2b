"""Simulated ARMA processes with known roots: the short-series benchmark's controlled data.

Gaussian noise of variance 1, 1,000 burn-in steps; seed s draws its path with
``numpy.random.default_rng([code, s])``, so that each process has its own stream of paths:

- ``ar2_cycle``: y_t = 1.6454 y_{t-1} - 0.9025 y_{t-2} + e_t, roots 0.95 exp(+-2 pi i / 12) (a damped
  12-step cycle);
- ``seasonal_ar``: SARIMA(1,0,0)(1,0,0)_24, (1 - 0.5 B)(1 - 0.8 B^24) y_t = e_t, roots 0.5 and
  0.9908 exp(2 pi i k / 24);
- ``arma21``: (1 - 0.9 B)(1 - 0.5 B) y_t = (1 + 0.6 B) e_t, roots 0.9 and 0.5.

statsmodels is imported inside :func:`simulate`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: steps simulated and dropped before a path starts
BURN_IN = 1000


@dataclass(frozen=True)
class Process:
    """A (seasonal) ARMA process with unit-variance Gaussian noise and no constant."""

    name: str
    code: int  # part of the random seed of its paths
    ar: tuple[float, ...]  # phi_1..phi_p
    ma: tuple[float, ...]  # theta_1..theta_q
    seasonal_ar: float = 0.0  # Phi of (1 - Phi B^s)
    s: int = 0  # seasonal lag (0: none)
    season: int | None = None  # season the anchors and the split rule use
    text: str = ""

    def ar_polynomial(self) -> np.ndarray:
        """The full AR polynomial in B, ascending powers: (1 + P,) with P = p + s."""
        poly = np.r_[1.0, -np.asarray(self.ar, dtype=float)]
        if self.s:
            poly = np.polymul(poly[::-1], np.r_[-self.seasonal_ar, np.zeros(self.s - 1), 1.0])[::-1]
        return poly

    def roots(self) -> np.ndarray:
        """Characteristic roots of the AR part (of z^P - phi_1 z^(P-1) - ...), inside the unit circle."""
        return np.roots(self.ar_polynomial())

    def orders(self) -> tuple[tuple, tuple]:
        """(order, seasonal_order) as SARIMAX takes them."""
        return (len(self.ar), 0, len(self.ma)), ((1, 0, 0, self.s) if self.s else (0, 0, 0, 0))

    def true_params(self) -> np.ndarray:
        """The generating coefficients in SARIMAX's order (ar, ma, seasonal ar); no constant, scale 1."""
        return np.array([*self.ar, *self.ma, *([self.seasonal_ar] if self.s else [])])


_RHO, _PERIOD = 0.95, 12
PROCESSES = {p.name: p for p in (
    Process("ar2_cycle", 1, (2 * _RHO * math.cos(2 * math.pi / _PERIOD), -_RHO ** 2), (),
            text="AR(2), roots 0.95·e^{±2πi/12} (a damped cycle of 12 steps): φ = (1.6454, −0.9025)"),
    Process("seasonal_ar", 2, (0.5,), (), seasonal_ar=0.8, s=24, season=24,
            text="SARIMA(1,0,0)(1,0,0)₂₄: φ = 0.5, Φ = 0.8; roots 0.5 and 0.9908·e^{2πik/24}"),
    Process("arma21", 3, (1.4, -0.45), (0.6,),
            text="ARMA(2,1): (1 − 0.9B)(1 − 0.5B) y = (1 + 0.6B) e, φ = (1.4, −0.45), θ = 0.6; roots 0.9, 0.5"),
)}


def simulate(process: Process, length: int, seed: int) -> np.ndarray:
    """One path of a process.

    Parameters
    ----------
    process : Process
    length : int
        Steps kept after the burn-in.
    seed : int
        The data seed: the same seed gives the same path.

    Returns
    -------
    numpy.ndarray
        (length,)
    """
    from statsmodels.tsa.arima_process import ArmaProcess

    rng = np.random.default_rng([process.code, int(seed)])
    arma = ArmaProcess(ar=process.ar_polynomial(), ma=np.r_[1.0, process.ma])
    return arma.generate_sample(nsample=int(length), scale=1.0, distrvs=rng.standard_normal, burnin=BURN_IN)
