"""Forecast accuracy metrics, on arrays and on tidy frames.

Array functions take ``y_true`` and ``y_pred`` of one shape and return a float:

- ``mse``, ``mae``, ``rmse``;
- ``smape``: symmetric MAPE in percent, 200·|y − ŷ| / (|y| + |ŷ|) (0 where both are 0), as in M4;
- ``mase``: MAE scaled by the in-sample MAE of the seasonal naive forecast on ``y_train``;
- ``pinball``: the quantile loss max(q·e, (q − 1)·e) with e = y − ŷ_q.

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


METRICS = ("mse", "mae", "rmse", "smape", "mase", "pinball")


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
        "pinball" the quantile columns ``yhat_q..``.
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
    if "pinball" in metrics and not quantiles:
        raise ValueError("pinball needs quantile columns named like 'yhat_q10'; none found")
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
