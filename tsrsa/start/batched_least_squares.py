"""Levenberg-Marquardt over a batch of small nonlinear least-squares problems at once, in numpy.

The statistical start fits a handful of models per series (the ETS forms, an ARIMA grid), each with a
few parameters (at most six). Their residuals are cheap to compute for many parameter vectors in one
vectorised call and costly to compute one at a time (each a recursion over the series), so every
problem takes its Levenberg-Marquardt steps together: each iteration evaluates, in one call, every
live problem's trial point. The Jacobian is taken by forward differences at the start and then kept
up to date by Broyden's rank-one updates from each trial, and taken afresh (the differences around
the trial point, in the same call) after a failed step or every :data:`REFRESH` steps. A trial that
lowers a problem's sum of squares is kept and its damping lowered; otherwise the damping is raised. A
problem stops when a step made with a Jacobian taken by differences lowers its sum of squares by less
than ``tolerance`` of it (a small step on an updated Jacobian takes it afresh instead), or when its
damping passes :data:`MAX_DAMPING`.

``residuals(u, which)`` takes points ``u`` (M, d) in an unconstrained space (the caller maps them to
its parameters' ranges) and the problem of each (``which``, (M,)), and returns (M, n): the same
number of residuals for every problem. Coordinates a problem does not use (``active`` False) stay
where they start. Non-finite residuals count as an infinite sum of squares.
"""
from __future__ import annotations

import numpy as np

#: a problem whose steps keep failing stops when its damping passes this
MAX_DAMPING = 1e8
#: the Jacobian is taken afresh by differences at least every this many steps
REFRESH = 4


def _sum_of_squares(r: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        sse = np.einsum("mn,mn->m", r, r)
    sse[~np.isfinite(sse)] = np.inf
    return sse


def _evaluate(residuals, u: np.ndarray, which: np.ndarray, active: np.ndarray, fresh: np.ndarray,
              step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r (M, n), sse (M,), J (F, d, n)) at points ``u`` of problems ``which`` in one call of ``residuals``;
    J the forward differences around the points where ``fresh`` (F of them), over the active coordinates."""
    M, d = u.shape
    shifts = np.eye(d)[None] * (step * active[which][fresh][:, None, :])  # (F, d, d): the active coordinates move
    around = (u[fresh][:, None, :] + shifts).reshape(-1, d)
    values = residuals(np.concatenate([u, around]), np.concatenate([which, np.repeat(which[fresh], d)]))
    r, moved = values[:M], values[M:].reshape(int(fresh.sum()), d, values.shape[1])
    with np.errstate(invalid="ignore", over="ignore"):
        jac = (moved - r[fresh][:, None, :]) / step  # (F, d, n)
    return r, _sum_of_squares(r), np.where(np.isfinite(jac), jac, 0.0)


def least_squares(residuals, u0: np.ndarray, active: np.ndarray, iterations: int = 40, tolerance: float = 1e-7,
                  step: float = 1e-6, damping: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """(u (B, d), sse (B,)): each problem's point of least sum of squared ``residuals`` found from ``u0``
    (module docstring)."""
    u = np.array(u0, dtype=np.float64)
    active = np.asarray(active, dtype=bool)
    B, d = u.shape
    everyone = np.arange(B)
    r, sse, jac = _evaluate(residuals, u, everyone, active, np.ones(B, dtype=bool), step)
    lam = np.full(B, damping)
    age = np.zeros(B, dtype=int)  # steps since the Jacobian was taken by differences
    failed = np.zeros(B, dtype=bool)
    live = np.isfinite(sse) & active.any(axis=1)
    for _ in range(iterations):
        ids = np.flatnonzero(live)
        if not ids.size:
            break
        J, res, on = jac[ids], r[ids], active[ids]
        A = J @ J.transpose(0, 2, 1)  # (m, d, d)
        gradient = J @ res[..., None]  # (m, d, 1)
        diagonal = np.diagonal(A, axis1=1, axis2=2)
        scale = lam[ids, None] * (diagonal + 1e-12 * (1.0 + diagonal.max(axis=1, keepdims=True)))
        scale = np.where(on, scale, 1.0)  # an unused coordinate: an identity row, no step
        system = A * (on[:, :, None] & on[:, None, :]) + np.eye(d)[None] * scale[:, :, None]
        try:
            delta = -np.linalg.solve(system, gradient)[..., 0] * on
        except np.linalg.LinAlgError:
            delta = -gradient[..., 0] / np.maximum(np.diagonal(system, axis1=1, axis2=2), 1e-300) * on
        trial = u[ids] + delta
        fresh = failed[ids] | (age[ids] + 1 >= REFRESH)
        r_trial, sse_trial, j_fresh = _evaluate(residuals, trial, ids, active, fresh, step)
        with np.errstate(invalid="ignore", over="ignore"):  # Broyden: J <- J + delta (dr - J' delta)' / |delta|^2
            change = r_trial - res - np.einsum("mdn,md->mn", J, delta)
            updated = J + delta[:, :, None] * change[:, None, :] / np.maximum(
                np.einsum("md,md->m", delta, delta), 1e-300)[:, None, None]
        updated = np.where(np.isfinite(updated), updated, J)
        better = sse_trial < sse[ids]
        small = better & (sse[ids] - sse_trial <= tolerance * sse[ids])
        exact = age[ids] == 0  # the step came from a Jacobian taken by differences
        stalled = small & ~exact  # a small step on an updated Jacobian: taken afresh, not stopped
        kept = ids[better]
        u[kept], r[kept], sse[kept] = trial[better], r_trial[better], sse_trial[better]
        taken = updated.copy()
        taken[fresh & better] = j_fresh[better[fresh]]  # the differences, where taken at the point kept
        jac[ids] = taken
        age[ids] = np.where(fresh & better, 0, age[ids] + 1)
        failed[ids] = ~better | stalled
        lam[kept] /= 3.0
        lam[ids[~better]] *= 4.0
        live[ids[small & exact]] = False
        live[ids[~better][lam[ids[~better]] > MAX_DAMPING]] = False
    return u, sse
