"""Summaries of a forecast distribution in numpy and scipy, without torch: its mean and exact quantiles.

The estimators' output head (:mod:`tsrsa.estimator.outputs`) and the served models of an ONNX export
(:mod:`tsrsa.serving.served_distribution`) both read a distribution's parameters through these, so that a
forecast served without torch is computed as the fitted model computes it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["distribution_mean", "distribution_quantile"]


def distribution_mean(name: str, p: dict[str, np.ndarray]) -> np.ndarray:
    """The mean of each element's distribution ``name`` ("normal", "student_t", "negative_binomial") with
    parameters ``p``."""
    return p["mean"] if name == "negative_binomial" else p["loc"]


def distribution_quantile(name: str, p: dict[str, np.ndarray], q: float) -> np.ndarray:
    """The exact quantile of level ``q`` of each element's distribution (scipy's inverse distribution functions)."""
    from scipy import stats

    if name == "normal":
        return stats.norm.ppf(q, loc=p["loc"], scale=p["scale"])
    if name == "student_t":
        return stats.t.ppf(q, p["df"], loc=p["loc"], scale=p["scale"])
    r = p["total_count"]
    return stats.nbinom.ppf(q, r, r / (r + p["mean"]))
