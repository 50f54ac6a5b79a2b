"""Summaries of the M3 sample's rows (:mod:`tsrsa.benchmarking.m3_sample`): means per model, variant and
origin kind, and the ratio of two variants paired by series with a bootstrap interval.

Origin kinds: "validation" (val1 and val2) and "test". A series' score at a kind is the mean of its
rows there (over origins and seeds); a row without a MASE (a refused fit, a constant fit part) is left
out and counted. Like the harness, this module imports only numpy and pandas.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

KINDS = {"val1": "validation", "val2": "validation", "test": "test"}
BOOTSTRAP_SEED = 0


def read_rows(path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={"unique_id": str, "variant": str, "model": str, "error": str},
                        keep_default_na=False, na_values={"mase": [""], "smape": [""], "fit_seconds": [""],
                                                          "predict_seconds": [""]})
    frame["kind"] = frame["origin"].map(KINDS)
    return frame


def per_series(rows: pd.DataFrame, metric: str = "mase") -> pd.DataFrame:
    """One score per (model, variant, kind, series): the mean over its scored rows."""
    scored = rows.dropna(subset=[metric])
    return scored.groupby(["model", "variant", "kind", "unique_id"], as_index=False)[metric].mean()


def ratio_interval(a: np.ndarray, b: np.ndarray, reps: int = 2000, seed: int = BOOTSTRAP_SEED) -> tuple:
    """mean(a) / mean(b) over paired series, and its bootstrap 95% interval (series resampled)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) == 0:
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), size=(reps, len(a)))
    ratios = a[picks].mean(axis=1) / b[picks].mean(axis=1)
    return float(a.mean() / b.mean()), float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def paired_ratio(rows: pd.DataFrame, model: str, kind: str, variant: str, reference: str,
                 reference_model: str | None = None, metric: str = "mase") -> dict:
    """Mean MASE of (model, variant) over that of (reference model or the same model, reference variant),
    with its bootstrap interval: paired by (series, origin) where both scored (means over seeds), then
    averaged per series."""
    scored = rows.dropna(subset=[metric])
    scored = scored[scored["kind"] == kind]

    def scores(m, v):
        chosen = scored[(scored["model"] == m) & (scored["variant"] == v)]
        return chosen.groupby(["unique_id", "origin"], as_index=False)[metric].mean()

    both = scores(model, variant).merge(scores(reference_model or model, reference), on=["unique_id", "origin"],
                                        suffixes=("", "_ref"))
    both = both.groupby("unique_id")[[metric, f"{metric}_ref"]].mean()
    ratio, low, high = ratio_interval(both[metric].to_numpy(), both[f"{metric}_ref"].to_numpy())
    return {"series": len(both), "ratio": ratio, "low": low, "high": high}


def shown(ratio: dict) -> str:
    return (f"{ratio['ratio']:.3f} [{ratio['low']:.3f}, {ratio['high']:.3f}] n={ratio['series']}"
            if ratio["series"] else "")


def table(rows: pd.DataFrame, reference: str | None = None, reference_model: str | None = None) -> pd.DataFrame:
    """One line per (model, variant, kind): series scored, rows refused, mean MASE and sMAPE over the
    series scored, mean fit seconds per row; ``vs <reference>``: the paired ratio (:func:`paired_ratio`) of
    mean MASE to the same model's at the reference variant; ``vs <reference_model>``: to that model's at the
    same variant."""
    scores, smapes = per_series(rows, "mase"), per_series(rows, "smape")
    lines = []
    order = list(dict.fromkeys(rows["model"]))
    for (model, variant, kind), group in rows.groupby(["model", "variant", "kind"], sort=False):
        mine = scores[(scores["model"] == model) & (scores["variant"] == variant) & (scores["kind"] == kind)]
        s = smapes[(smapes["model"] == model) & (smapes["variant"] == variant) & (smapes["kind"] == kind)]
        line = {"model": model, "variant": variant, "kind": kind, "series": len(mine),
                "refused": int((group["error"].astype(str) != "").sum()),
                "mase": mine["mase"].mean(), "smape": s["smape"].mean(), "fit_s": group["fit_seconds"].mean()}
        if reference is not None and variant != reference:
            r = paired_ratio(rows, model, kind, variant, reference)
            line[f"vs {reference}"] = shown(r)
        if reference_model is not None and model != reference_model:
            r = paired_ratio(rows, model, kind, variant, variant, reference_model)
            line[f"vs {reference_model}"] = shown(r)
        lines.append(line)
    out = pd.DataFrame(lines)
    if out.empty:
        return out
    out["_m"] = out["model"].map(order.index)
    return out.sort_values(["kind", "_m", "variant"], ascending=[False, True, True]).drop(columns="_m")


def render(rows: pd.DataFrame, reference: str | None = None, reference_model: str | None = "ETS") -> str:
    """The table as text, validation first."""
    if reference_model not in set(rows["model"]):
        reference_model = None
    out = table(rows, reference, reference_model)
    if out.empty:
        return "no rows"
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 40):
        return out.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="")
