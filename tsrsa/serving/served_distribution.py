"""A distribution loss's forecast columns from its exported parameters: numpy and scipy only (no torch).

The graph of a model fitted with ``loss="normal"``, ``"student_t"`` or ``"negative_binomial"`` outputs each
step's distribution parameters in the series' scaled units (:class:`~tsrsa.serving.onnx_export.ScaledForecast`);
the columns are what the fitted model's ``predict`` makes of them:

- ``yhat``: the mean (``loc`` of normal and Student's t, ``mean`` of the negative binomial);
- ``yhat_q..``: the exact quantile of each level, scipy's inverse distribution function
  (``norm.ppf``, ``t.ppf``, ``nbinom.ppf`` with p = r / (r + mean));

each restored to the data's units by the series' ``scale`` and ``loc`` (a count model is fitted without a
shift or rescaling: 0 and 1).
"""
from __future__ import annotations

import numpy as np

from tsrsa.data.distribution_summaries import distribution_mean, distribution_quantile

__all__ = ["DISTRIBUTION_NAMES", "distribution_columns"]

#: the distributions whose parameters an export may hold, and their parameters in the graph's order
DISTRIBUTION_NAMES = {"normal": ("loc", "scale"), "student_t": ("loc", "scale", "df"),
                      "negative_binomial": ("mean", "total_count")}


def distribution_columns(record: dict, parameters: np.ndarray, loc: np.ndarray,
                         scale: np.ndarray) -> dict[str, np.ndarray]:
    """``{"yhat": (S, h), "yhat_q..": (S, h), ...}`` in the data's units from ``parameters`` (S, h, P), the graph's
    output in the scaled units of series with statistics ``loc``/``scale`` (S,); ``record``: the export's
    ``distribution`` (``name``, ``parameters`` in order, ``quantiles`` ``{column: level}``)."""
    name, names = record["name"], tuple(record["parameters"])
    if DISTRIBUTION_NAMES.get(name) != names:
        raise ValueError(f"the export's distribution {name!r} with parameters {list(names)} is not one this tsrsa "
                         f"serves ({sorted(DISTRIBUTION_NAMES)}): export the model again")
    p = {key: parameters[..., i] for i, key in enumerate(names)}
    a, b = scale[:, None], loc[:, None]
    columns = {"yhat": distribution_mean(name, p) * a + b}
    columns.update({column: distribution_quantile(name, p, float(q)) * a + b
                    for column, q in record["quantiles"].items()})
    return columns
