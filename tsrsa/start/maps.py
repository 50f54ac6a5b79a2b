"""What every statistical start is made of: an affine map of the window, and the state-space algebra behind it.

A start (:mod:`tsrsa.start.fit`) is a :class:`StartMap`, ``S(x) = W x + b`` on the latest
``L`` values of a scaled window. The AR start reads its map off the recursion (:func:`affine_map`);
the ETS and ARIMA starts are linear state-space models in innovations form,

    y_t = w' s_t + e_t,        s_(t+1) = F s_t + g e_t,

whose forecast from a window is linear in the window once the state before the window is: it is
taken as the state of least squared one-step errors over the window (:func:`innovations_start`),
as a fit concentrates its initial state out of the likelihood. The discount ``D = F - g w'`` carries
the initial state's error into the forecast; over a window of L steps it is ``D^L`` of it.

Fitted models are kept (:func:`kept_fit`), so a refit on the same training data (a tuning trial, a
refit with other network options) does not fit them again.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

#: the latest per-series statistical fits kept in memory (:func:`kept_fit`)
FITS_KEPT = 256
#: an AR start reads at most the latest ``AR_TAIL_STEPS + window`` steps of each series (:func:`tail_length`)
AR_TAIL_STEPS = 8192
#: the ETS and ARIMA starts read at most the latest ``max(TAIL_STEPS, TAIL_SEASONS * season) + window`` steps: on
#: 20 M4 Hourly series (652 to 912 training steps, h 48), tails of 352 and 672 steps left the automatic start 1.12
#: and 1.07 times the test error of the fit on the whole series (geometric means), the ETS and ARIMA starts 1.10
#: and 1.11 at 352; 1,024 steps hold a series of that regime whole (docs/statistical_start.md, "What it costs")
TAIL_STEPS = 1024
TAIL_SEASONS = 24
_fits: OrderedDict = OrderedDict()
_fits_lock = threading.Lock()


@dataclass(frozen=True)
class StartMap:
    """A fitted start: ``forecast = weight @ window[-weight.shape[1]:] + bias``; ``record`` describes it."""

    weight: np.ndarray  # (h, window)
    bias: np.ndarray  # (h,)
    record: dict

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        """(n, >= window) -> (n, h)."""
        return windows[:, -self.weight.shape[1]:] @ self.weight.T + self.bias


def spread(n: int, k: int) -> np.ndarray:
    """At most ``k`` indices evenly spread over ``range(n)``."""
    return np.unique(np.linspace(0, n - 1, min(n, k)).round().astype(int))


def tail_length(window: int, season: int, model: str = "ets") -> int:
    """The most steps of each series the fit of a start ``model`` reads. The map reads only a window, so a
    longer history changes its parameters little and its cost much (docs/statistical_start.md, "What it
    costs"): the ETS and ARIMA starts (a search over forms, each fit a few dozen passes over the steps)
    read ``max(TAIL_STEPS, TAIL_SEASONS * season)`` steps before the last window, and that window; the AR
    start (one least-squares fit, linear in the steps) reads :data:`AR_TAIL_STEPS` before it: KPSS, which
    decides its differencing, needs a long stretch to tell a persistent level from a unit root (on ETT's
    hourly and 15-minute oil temperatures it rejects level stationarity on 8,192 steps, and on 512 to
    4,096 steps it sometimes does not, and the AR on the levels then forecasts 1.1 to 4 times worse)."""
    if model == "ar":
        return AR_TAIL_STEPS + int(window)
    return max(TAIL_STEPS, TAIL_SEASONS * max(int(season), 1)) + int(window)


def tails(series: list[np.ndarray], window: int, season: int, model: str = "ets") -> list[np.ndarray]:
    """Each series' latest :func:`tail_length` steps for ``model`` (the whole of a shorter one)."""
    steps = tail_length(window, season, model)
    return [np.asarray(y, dtype=np.float64)[-steps:] for y in series]


def affine_map(forecasts, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) of an affine function ``forecasts`` of windows (n, window) -> (n, h): b at the zero
    window, W's columns at the unit windows."""
    probes = np.vstack([np.zeros((1, window)), np.eye(window)])
    values = forecasts(probes)  # (window + 1, h)
    return (values[1:] - values[0]).T, values[0]


def innovations_start(F: np.ndarray, g: np.ndarray, w: np.ndarray, window: int) -> np.ndarray:
    """(k, window): the state before a window as a linear function of the window: the state whose
    one-step errors over the window have the least sum of squares. From a state s, the errors are
    ``(I - A) x - B s`` (B's row t: how s reaches the forecast of step t, ``w' D^t``; A: how the
    earlier values of the window do), so the state is ``lstsq(B, I - A) x``. The directions B cannot
    see (a level shift taken back by the seasonal states, a trend without a trend) move no forecast;
    the least-norm state is taken."""
    D = F - np.outer(g, w)
    reach, carried = np.zeros((window, len(g))), np.zeros((window, window))
    power, past = np.eye(len(g)), np.zeros((len(g), window))  # D^t and the state's map of x_1..x_t
    for t in range(window):
        reach[t], carried[t] = w @ power, w @ past
        power, past = D @ power, D @ past
        past[:, t] += g
    return np.linalg.lstsq(reach, np.eye(window) - carried, rcond=None)[0]


def innovations_map(F: np.ndarray, g: np.ndarray, w: np.ndarray, H: np.ndarray, window: int) -> np.ndarray:
    """(h, window): the forecast ``H s`` from the state s after a window (H: (h, k)), the state run over
    the window from :func:`innovations_start`."""
    D = F - np.outer(g, w)
    S = innovations_start(F, g, w, window)  # the state as a map of the window
    for j in range(window):
        S = D @ S
        S[:, j] += g
    return H @ S


def _key(kind: str, y: np.ndarray, detail) -> tuple:
    y = np.ascontiguousarray(y, dtype=np.float64)
    return kind, hashlib.sha1(y.tobytes()).hexdigest(), detail


def kept(kind: str, y: np.ndarray, detail):
    """The fit kept for this ``kind``, values and ``detail`` (:func:`kept_fit`), or None."""
    key = _key(kind, y, detail)
    with _fits_lock:
        if key in _fits:
            _fits.move_to_end(key)
            return _fits[key]
    return None


def keep(kind: str, y: np.ndarray, detail, made):
    """Keep the fit ``made`` of ``y`` among the :data:`FITS_KEPT` latest, its arrays made read-only; returns it."""
    for values in (made.params, made.initial, made.state):
        values.setflags(write=False)
    with _fits_lock:
        _fits[_key(kind, y, detail)] = made
        while len(_fits) > FITS_KEPT:
            _fits.popitem(last=False)
    return made


def kept_fit(kind: str, y: np.ndarray, detail, fit):
    """``fit(y)`` (a :class:`~tsrsa.statistical.series_fit.SeriesFit`), or the one it gave for the same ``kind``,
    values and ``detail`` (the forms or season it searched) among the :data:`FITS_KEPT` latest: the fits are
    deterministic, and a kept fit is shared, so its arrays are made read-only."""
    found = kept(kind, y, detail)
    return found if found is not None else keep(kind, y, detail, fit(np.ascontiguousarray(y, dtype=np.float64)))


def forget_kept_fits() -> None:
    """Empty the kept fits (:func:`kept_fit`): the next start fits every series afresh."""
    with _fits_lock:
        _fits.clear()
