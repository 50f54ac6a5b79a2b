"""Forecast accuracy metrics, on arrays and on tidy frames.

Array functions take ``y_true`` and ``y_pred`` of one shape and return a float:

- ``mse``, ``mae``, ``rmse``;
- ``smape``: symmetric MAPE in percent, 200·|y − ŷ| / (|y| + |ŷ|) (0 where both are 0), as in M4;
- ``mase``: MAE scaled by the in-sample MAE of the seasonal naive forecast on ``y_train``;
- ``pinball``: the quantile loss max(q·e, (q − 1)·e) with e = y − ŷ_q;
- ``weighted_quantile_loss`` ("wql"): 2·Σ pinball_q / Σ|y| averaged over the levels q (GluonTS's
  mean wQuantileLoss), a scale-free score of quantile forecasts;
- ``crps``: the continuous ranked probability score of sample forecasts, E|X − y| − E|X − X'|/2
  (``crps_ensemble`` elementwise; ``crps_normal`` the closed form of a normal forecast).

:func:`evaluate` scores a tidy frame (the output of ``predict`` joined to actuals, or of
``cross_validate``) overall or per group.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

_QUANTILE_COLUMN = re.compile(r"^yhat_q(\d+(?:\.\d+)?)$")


def _pair(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(y_true, dtype=np.float64)
    b = np.asarray(y_pred, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"y_true has shape {a.shape} but y_pred has shape {b.shape}; they must match")
    if a.size == 0:
        raise ValueError("no values to score: y_true is empty")
    return a, b


def mse(y_true, y_pred) -> float:
    """Mean squared error."""
    a, b = _pair(y_true, y_pred)
    return float(np.mean((a - b) ** 2))


def mae(y_true, y_pred) -> float:
    """Mean absolute error."""
    a, b = _pair(y_true, y_pred)
    return float(np.mean(np.abs(a - b)))


def rmse(y_true, y_pred) -> float:
    """Root mean squared error."""
    return float(np.sqrt(mse(y_true, y_pred)))


def smape(y_true, y_pred) -> float:
    """Symmetric mean absolute percentage error, in percent (0 to 200)."""
    a, b = _pair(y_true, y_pred)
    denom = np.abs(a) + np.abs(b)
    ratio = np.divide(2.0 * np.abs(a - b), denom, out=np.zeros_like(denom), where=denom > 0)
    return float(100.0 * np.mean(ratio))


def mase(y_true, y_pred, y_train, season_length: int = 1) -> float:
    """Mean absolute scaled error: MAE over the in-sample seasonal-naive MAE of ``y_train``."""
    train = np.asarray(y_train, dtype=np.float64).ravel()
    m = int(season_length)
    if m < 1:
        raise ValueError(f"season_length={season_length} must be >= 1")
    if len(train) <= m:
        raise ValueError(f"y_train has {len(train)} values; MASE needs more than season_length={m}")
    scale = np.mean(np.abs(train[m:] - train[:-m]))
    if scale == 0:
        raise ValueError("y_train's seasonal-naive error is 0 (a constant or exactly periodic series); MASE is undefined")
    return mae(y_true, y_pred) / float(scale)


def pinball(y_true, y_quantile, q: float) -> float:
    """Mean pinball (quantile) loss of forecasts ``y_quantile`` of level ``q``."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q={q} must lie in (0, 1)")
    a, b = _pair(y_true, y_quantile)
    err = a - b
    return float(np.mean(np.maximum(q * err, (q - 1.0) * err)))


def weighted_quantile_loss(y_true, y_quantiles, quantiles) -> float:
    """Weighted quantile loss: mean over levels q of 2·Σ max(q·e, (q − 1)·e) / Σ|y|, e = y − ŷ_q.

    ``y_quantiles`` holds one forecast array per level of ``quantiles`` (each of ``y_true``'s shape).
    """
    levels = [float(q) for q in np.atleast_1d(quantiles)]
    forecasts = list(y_quantiles)
    if len(forecasts) != len(levels) or not levels:
        raise ValueError(f"y_quantiles holds {len(forecasts)} forecast(s) for {len(levels)} level(s); give one per "
                         f"level")
    y = np.asarray(y_true, dtype=np.float64)
    total = np.sum(np.abs(y))
    if total == 0:
        raise ValueError("the weighted quantile loss divides by sum(|y_true|), which is 0 here; use pinball instead")
    losses = []
    for q, forecast in zip(levels, forecasts):
        if not 0.0 < q < 1.0:
            raise ValueError(f"q={q} must lie in (0, 1)")
        a, b = _pair(y, forecast)
        err = a - b
        losses.append(2.0 * np.sum(np.maximum(q * err, (q - 1.0) * err)) / total)
    return float(np.mean(losses))


def crps_ensemble(y_true, samples, *, axis: int = -1) -> np.ndarray:
    """Elementwise CRPS of sample forecasts: ``samples`` has ``y_true``'s shape plus the draws along
    ``axis``; for each value, E|X − y| − E|X − X'|/2 over the m draws (the empirical distribution's
    CRPS; E|X − X'| from the sorted draws in O(m log m))."""
    y = np.asarray(y_true, dtype=np.float64)
    x = np.moveaxis(np.asarray(samples, dtype=np.float64), axis, -1)  # (..., m)
    if x.shape[:-1] != y.shape:
        raise ValueError(f"samples has shape {np.shape(samples)} but y_true has {y.shape}: samples needs y_true's "
                         f"shape plus the draws along axis={axis}")
    m = x.shape[-1]
    if m == 0 or y.size == 0:
        raise ValueError("no values to score: y_true or the draws are empty")
    x = np.sort(x, axis=-1)
    spread = 2.0 * np.sum((2.0 * np.arange(1, m + 1) - m - 1) * x, axis=-1) / m**2  # E|X - X'|
    return np.mean(np.abs(x - y[..., None]), axis=-1) - 0.5 * spread


def crps_normal(y_true, mu, sigma) -> np.ndarray:
    """Elementwise CRPS of normal forecasts N(mu, sigma²), in closed form (Gneiting et al. 2005):
    sigma · (z (2Φ(z) − 1) + 2φ(z) − 1/√π), z = (y − mu) / sigma."""
    from scipy.special import ndtr

    y, mu, sigma = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (y_true, mu, sigma)))
    if not np.all(sigma > 0):
        raise ValueError("sigma must be > 0 everywhere")
    z = (y - mu) / sigma
    pdf = np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
    return sigma * (z * (2.0 * ndtr(z) - 1.0) + 2.0 * pdf - 1.0 / np.sqrt(np.pi))


def crps(y_true, samples, *, axis: int = -1) -> float:
    """Mean CRPS of sample forecasts (see :func:`crps_ensemble`)."""
    return float(np.mean(crps_ensemble(y_true, samples, axis=axis)))


METRICS = ("mse", "mae", "rmse", "smape", "mase", "pinball", "wql")


def quantile_columns(frame: pd.DataFrame) -> dict[str, float]:
    """The quantile forecast columns of ``frame`` and their levels, in column order.

    Examples
    --------
    >>> quantile_columns(pd.DataFrame(columns=["unique_id", "yhat", "yhat_q10", "yhat_q2.5"]))
    {'yhat_q10': 0.1, 'yhat_q2.5': 0.025}
    """
    found = {}
    for col in frame.columns:
        match = _QUANTILE_COLUMN.match(str(col))
        if match:
            found[col] = float(match.group(1)) / 100.0
    return found




def evaluate(
    df: pd.DataFrame,
    metrics=("mae", "mse"),
    *,
    by=None,
    target_col: str = "y",
    pred_col: str = "yhat",
    id_col: str = "unique_id",
    train_df: pd.DataFrame | None = None,
    season_length: int = 1,
) -> pd.DataFrame:
    """Score a tidy forecast frame.

    Parameters
    ----------
    df : DataFrame
        Rows with the actual value (``target_col``) and the forecast (``pred_col``), and for
        "pinball" and "wql" the quantile columns ``yhat_q..``.
    metrics : sequence of str
        Names from :data:`METRICS`.
    by : str or list of str, optional
        Group column(s), e.g. the id column or "step"; None scores everything at once.
    train_df : DataFrame, optional
        Long history (id and target columns) for "mase", which scales each series' error by
        its own in-sample seasonal-naive error and averages over series.
    season_length : int, default 1
        Season of the naive forecast inside "mase".

    Returns
    -------
    DataFrame
        One row per group (one row when ``by`` is None), one column per metric.

    Examples
    --------
    >>> import pandas as pd
    >>> from tsrsa.metrics import evaluate
    >>> cv = pd.DataFrame({"unique_id": ["a", "a", "b"], "y": [1.0, 2.0, 3.0], "yhat": [1.0, 3.0, 1.0]})
    >>> evaluate(cv, ["mae", "mse"], by="unique_id")
      unique_id  mae  mse
    0         a  0.5  0.5
    1         b  2.0  4.0
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"evaluate needs a DataFrame, got {type(df).__name__}")
    if isinstance(metrics, str):
        metrics = [metrics]
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {METRICS}")
    missing = [c for c in (target_col, pred_col) if c not in df.columns]
    if missing:
        raise ValueError(f"the frame lacks column(s) {missing}; it has {list(df.columns)}")
    quantiles = quantile_columns(df)
    for name in ("pinball", "wql"):
        if name in metrics and not quantiles:
            raise ValueError(f"{name} needs quantile columns named like 'yhat_q10'; none found")
    if "mase" in metrics and train_df is None:
        raise ValueError("mase needs train_df= (the history each series' error is scaled by)")
    scales = None
    if "mase" in metrics:
        scales = {
            key: np.mean(np.abs(g[target_col].to_numpy()[season_length:] - g[target_col].to_numpy()[:-season_length]))
            for key, g in train_df.groupby(id_col, sort=False, observed=True)
        }

    def score(group: pd.DataFrame) -> dict:
        y, yhat = group[target_col].to_numpy(float), group[pred_col].to_numpy(float)
        row = {}
        for name in metrics:
            if name == "pinball":
                row[name] = float(np.mean([pinball(y, group[c].to_numpy(float), q) for c, q in quantiles.items()]))
            elif name == "wql":
                row[name] = weighted_quantile_loss(y, [group[c].to_numpy(float) for c in quantiles],
                                                   list(quantiles.values()))
            elif name == "mase":
                per_series = [
                    mae(g[target_col], g[pred_col]) / scales[key]
                    for key, g in group.groupby(id_col, sort=False, observed=True)
                ]
                row[name] = float(np.mean(per_series))
            else:
                row[name] = globals()[name](y, yhat)
        return row

    if by is None:
        return pd.DataFrame([score(df)])
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, group in df.groupby(keys, sort=True, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(keys, key)), **score(group)})
    return pd.DataFrame(rows)
