"""What a neural forecaster's head outputs, and how its outputs become forecast columns.

``loss`` decides (:class:`OutputHead`, the part of a :class:`~tsrsa.estimator.neural.NeuralForecaster` its
``output_head`` gives):

- "mse", "mae", "huber": one value per step, ``yhat``;
- "quantile": one output per level (those in ``quantiles``, default 0.1 and 0.9, and 0.5), sorted so
  that they never cross: ``yhat`` is the median, ``yhat_q..`` the asked levels (``yhat_q50`` only when
  0.5 was asked for explicitly: it repeats ``yhat``);
- "normal", "student_t", "negative_binomial" (:mod:`tsrsa.nn.distributions`): the distribution's
  parameters per step, trained by negative log-likelihood. ``yhat`` is the distribution's mean, and
  each level of ``quantiles`` (none by default) adds its exact quantile as ``yhat_q..``;
  ``sample(n)`` draws sample paths. The network forecasts every step's distribution from the window
  at once (a direct multi-horizon head): its distributions are marginals, and the steps of a sample
  path are drawn independently of each other.

Counts. ``loss="negative_binomial"`` needs a target of non-negative integers (checked on every frame
the model reads; a ``fill`` that interpolates makes fractions) and ``scaler=None`` or "identity": its
likelihood reads the counts themselves, so the series are not shifted or rescaled; the network instead
divides each input window by its mean absolute value (at least 1) and multiplies the mean back
(DeepAR's mean scaling; RevIN, when on, scales that way, without a shift).
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import torch

from tsrsa.data.distribution_summaries import distribution_mean, distribution_quantile
from tsrsa.data.limits import check_request_size
from tsrsa.data.scalers import SCALERS
from tsrsa.data.validation import format_id
from tsrsa.estimator.params import check_choice, quantile_column, quantile_levels
from tsrsa.nn.distributions import DISTRIBUTIONS, get_distribution
from tsrsa.nn.losses import LOSSES

#: quantile levels of loss="quantile" when none are given (0.5 is yhat)
DEFAULT_QUANTILES = (0.1, 0.5, 0.9)


# ---------------------------------------------------------------------- distributions, in numpy
def distribution_parameters(name: str, raw: np.ndarray) -> dict[str, np.ndarray]:
    """The parameters (float64, raw's shape without its last axis) of raw head outputs (..., P)."""
    with torch.no_grad():
        params = get_distribution(name).parameters(torch.from_numpy(np.asarray(raw, dtype=np.float64)))
    return {key: value.numpy() for key, value in params.items()}


def distribution_draws(name: str, p: dict[str, np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent draws of every element: shape (*shape, n)."""
    size = (n, *distribution_mean(name, p).shape)
    if name == "normal":
        draws = rng.normal(p["loc"], p["scale"], size=size)
    elif name == "student_t":
        draws = p["loc"] + p["scale"] * rng.standard_t(p["df"], size=size)
    else:
        r = p["total_count"]
        draws = rng.negative_binomial(r, r / (r + p["mean"]), size=size).astype(np.float64)
    return np.moveaxis(draws, 0, -1)


def check_counts(panel, target_col: str) -> None:
    """ValueError naming the first value of ``panel`` that is not a non-negative integer."""
    bad = np.flatnonzero((panel.values < 0) | (panel.values != np.floor(panel.values)))
    if bad.size:
        stamps, series = panel.stamps_at(bad[:1])
        raise ValueError(
            f"loss='negative_binomial' models counts, but {target_col!r} of series "
            f"{format_id(panel.ids[int(series[0])])} is {float(panel.values[bad[0]])!r} at {stamps[0]} ({bad.size} value(s) "
            f"are not non-negative integers); pass counts (a fill that interpolates makes fractions: use "
            f"fill='ffill' or 'zero'), or use loss='normal' or 'student_t' for real values")


#: bytes per row of ``sample``'s frame, with what is built on the way: the draws and their scaled copies
#: (3 x float64), the positions of the timestamps (int64), the timestamp, id, sample and value columns and
#: the frame's own copy of them
SAMPLE_ROW_BYTES = 96


def check_sample_size(n: int, n_series: int, h: int) -> None:
    """ValueError before ``sample(n)`` draws ``n`` paths of ``h`` steps for ``n_series`` series, when their
    frame would pass the limit of one request (:mod:`tsrsa.data.limits`)."""
    rows = n * n_series * h
    check_request_size(f"sample(n={n})", rows * SAMPLE_ROW_BYTES,
                       f"{rows:,} rows ({n_series} series x {h} steps x {n} paths)",
                       "draw fewer paths (a few hundred to a few thousand give stable quantiles), or draw them "
                       "in several calls with different random_state")


def check_random_state(random_state) -> np.random.Generator:
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, numbers.Integral) \
            or random_state < 0:
        raise TypeError(f"random_state must be None, an int >= 0 or a numpy Generator, got {random_state!r}")
    return np.random.default_rng(int(random_state))


@dataclasses.dataclass(frozen=True)
class OutputHead:
    """What a network's head outputs for ``loss`` (with ``quantiles`` and ``scaler``), and how its outputs become
    forecast columns or draws (module docstring)."""

    loss: str
    quantiles: object = None
    scaler: object = None

    @property
    def distribution(self):
        """The distribution output of a distribution loss, else None."""
        return get_distribution(self.loss) if self.loss in DISTRIBUTIONS else None

    @property
    def levels(self) -> tuple[float, ...] | None:
        """The levels a quantile head outputs (0.5 included), None for another loss."""
        if self.loss != "quantile":
            return None
        levels = quantile_levels(self.quantiles if self.quantiles is not None else DEFAULT_QUANTILES)
        return tuple(sorted(set(levels) | {0.5}))

    @property
    def asked(self) -> tuple[float, ...]:
        """The levels that get a ``yhat_q..`` column: those asked for, or 0.1 and 0.9 for a quantile loss."""
        if self.quantiles is not None:
            return quantile_levels(self.quantiles)
        return tuple(q for q in DEFAULT_QUANTILES if q != 0.5) if self.loss == "quantile" else ()

    def network_options(self) -> dict:
        """``n_outputs`` and ``distribution`` of the network's configuration."""
        distribution, levels = self.distribution, self.levels
        if distribution is not None:
            return {"n_outputs": distribution.n_outputs, "distribution": distribution.name}
        return {"n_outputs": len(levels) if levels else 1, "distribution": None}

    def check(self) -> None:
        """``loss``, ``quantiles`` and, for counts, ``scaler`` checked (at the entry of ``fit``)."""
        check_choice("loss", self.loss, LOSSES)
        if self.quantiles is not None:
            quantile_levels(self.quantiles)
            if self.loss != "quantile" and self.loss not in DISTRIBUTIONS:
                raise ValueError(f"quantiles={self.quantiles!r} need loss='quantile' or a distribution loss "
                                 f"{DISTRIBUTIONS} (loss={self.loss!r} gives a point forecast)")
        check_choice("scaler", self.scaler, SCALERS, allow_none=True)
        if self.loss == "negative_binomial" and self.scaler not in (None, "identity"):
            raise ValueError(f"loss='negative_binomial' reads the counts themselves, and scaler={self.scaler!r} "
                             f"would shift or rescale them: pass scaler=None (the network mean-scales each "
                             f"window instead)")

    def check_target(self, panel, target_col: str) -> None:
        """The target of ``panel`` checked for what the loss reads (counts for "negative_binomial")."""
        if self.loss == "negative_binomial":
            check_counts(panel, target_col)

    def columns(self, y: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> dict[str, np.ndarray]:
        """Head outputs ``y`` (n, h, Q) in the scaled units of series with statistics ``loc``/``scale``
        (n,) -> ``{"yhat": (n, h), "yhat_q..": ...}`` in the data's units."""
        distribution = self.distribution
        if distribution is None:
            y = y * scale[:, None, None] + loc[:, None, None]
            levels = self.levels
            if levels is None:
                return {"yhat": y[..., 0]}
            y = np.sort(y, axis=-1)  # quantiles never cross
            columns = {"yhat": y[..., levels.index(0.5)]}
            columns.update({quantile_column(q): y[..., levels.index(q)] for q in self.asked})
            return columns
        name = distribution.name
        p = distribution_parameters(name, y)  # every summary in the scaled units, then restored
        a, b = scale[:, None], loc[:, None]
        columns = {"yhat": distribution_mean(name, p) * a + b}
        columns.update({quantile_column(q): distribution_quantile(name, p, q) * a + b for q in self.asked})
        return columns

    def draws(self, y: np.ndarray, loc: np.ndarray, scale: np.ndarray, n: int,
              rng: np.random.Generator) -> np.ndarray:
        """Head outputs ``y`` (S, h, Q) of a distribution loss, in the scaled units of series with statistics
        ``loc``/``scale`` (S,) -> ``n`` independent draws of every step from ``rng``, (S, h, n), in the
        data's units."""
        name = self.distribution.name
        p = distribution_parameters(name, y)  # drawn in the scaled units, then restored
        return distribution_draws(name, p, n, rng) * scale[:, None, None] + loc[:, None, None]

