"""One series' fitted statistical model: its form, parameters and filter state, as plain values.

A :class:`SeriesFit` is what :class:`~tsrsa.estimator.statistical_state.StatisticalState` keeps
per series. Its ``form`` (JSON: the ``kind`` — "ets", "arima" or "theta" — and the chosen form)
says which module runs it (``statistical_state.FAMILIES``); the arrays are the fitted parameters,
the state before the first observation and the state after the last one. It never changes: running
the model over new observations returns a new one.

Each family module (:mod:`~tsrsa.statistical.ets_model`, :mod:`~tsrsa.statistical.arima_model`,
:mod:`~tsrsa.statistical.theta_model`) implements the same functions on it:

- ``run(fit, y)``: the state after ``y``, new observations after the last (statsmodels'
  ``extend``: the filter continued from the stored state, parameters fixed);
- ``replay(fit, y)``: the state after ``y``, the series from the first observation the model was
  fitted from (the filter run again from the fitted initial state: ``append(refit=False)``);
- ``restart(fit, y, start)``: the state after ``y``, any stretch of the series (a new one, or a
  window), its initial state set from ``y`` as statsmodels sets it, parameters fixed (``apply``);
  ``start`` is the position of ``y[0]`` counted from the fitted first observation, None if unknown;
- ``forecast(fit, h)``: (h,) point forecasts after the last observation;
- ``forecasts_at(fit, y, cutoffs, h)``: (W, h) forecasts after positions ``cutoffs`` of ``y``, the
  series from its fitted start, filtered once from the fitted initial state (no look-ahead);
- ``first_bad(fit, y)``: the position of the first value of ``y`` the model cannot take (a value
  <= 0 for a multiplicative form), -1 when none;
- ``describe(fit)``: (name, {parameter: value}) for ``params_``;
- ``check(fit)``: ValueError unless the arrays fit the form (a saved model as it loads).

ETS and ARIMA also keep the sum of squares of their one-step errors and how many were scored
(``sse``, ``scored``: the engine's own ``mse`` of an ETS fit, the concentrated ARIMA scale's sum);
``run``, ``replay`` and ``restart`` carry them on as statsmodels' ``append``/``apply`` without
refit re-estimate the scale, and ``noise_variance`` (their ratio) scales the engine's prediction
intervals: those families add ``intervals(fit, h, levels)``, (L, 2, h) lower and upper bounds of
each level after the last observation, computed by statsmodels (:mod:`~tsrsa.statistical.ets_model`,
:mod:`~tsrsa.statistical.arima_model`).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class SeriesFit:
    """A fitted model of one series (module docstring)."""

    form: dict  # JSON-able: "kind" and the chosen form
    params: np.ndarray  # (k,) float64, the fitted parameters
    initial: np.ndarray  # float64, the state before the first observation
    state: np.ndarray  # float64, the state after the last observation
    nobs: int  # observations from the fitted first one to the last one
    aic: float  # of the fit (NaN where none is known)
    sse: float = math.nan  # sum of the squared one-step errors scored (NaN: unknown, e.g. a Theta model)
    scored: int = 0  # how many one-step errors ``sse`` sums

    @property
    def noise_variance(self) -> float:
        """The variance of the one-step errors, ``sse / scored`` (NaN where unknown): the scale of the
        engine's prediction intervals."""
        return self.sse / self.scored if self.scored > 0 and math.isfinite(self.sse) else math.nan

    def with_errors(self, sse: float, scored: int) -> "SeriesFit":
        """This model with ``scored`` one-step errors whose squares sum to ``sse``."""
        return replace(self, sse=float(sse), scored=int(scored))

    def moved(self, state: np.ndarray, nobs: int) -> "SeriesFit":
        """This model with the state ``state`` after observation ``nobs``."""
        return replace(self, state=np.asarray(state, dtype=np.float64), nobs=int(nobs))

    def to_json(self) -> dict:
        """The JSON part of a saved fit (the arrays go to arrays.npz)."""
        out = {"form": self.form, "nobs": self.nobs, "aic": None if math.isnan(self.aic) else self.aic}
        if math.isfinite(self.sse):  # a model saved before the errors were kept has none: its intervals refuse
            out.update(sse=self.sse, scored=self.scored)
        return out

    @classmethod
    def from_saved(cls, data: dict, params, initial, state) -> "SeriesFit":
        """The fit ``to_json`` and the arrays describe (TypeError/ValueError/KeyError when they do not)."""
        form = data["form"]
        if not isinstance(form, dict) or not isinstance(form.get("kind"), str):
            raise ValueError(f"a saved statistical model has no valid form: {form!r}")
        json.dumps(form)
        nobs, aic = data["nobs"], data["aic"]
        if isinstance(nobs, bool) or not isinstance(nobs, int) or nobs < 1:
            raise ValueError(f"a saved statistical model counts {nobs!r} observations")
        arrays = [np.asarray(a, dtype=np.float64) for a in (params, initial, state)]
        if not all(np.isfinite(a).all() for a in arrays):
            raise ValueError("a saved statistical model holds a non-finite parameter or state")
        sse, scored = data.get("sse"), data.get("scored", 0)
        if sse is not None and (isinstance(sse, bool) or not isinstance(sse, (int, float)) or not math.isfinite(sse)
                                or sse < 0 or isinstance(scored, bool) or not isinstance(scored, int) or scored < 1):
            raise ValueError(f"a saved statistical model holds one-step errors {sse!r} over {scored!r} steps")
        return cls(form, *arrays, nobs, math.nan if aic is None else float(aic),
                   math.nan if sse is None else float(sse), int(scored) if sse is not None else 0)
