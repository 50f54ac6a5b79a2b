"""Coherent forecasts of a hierarchy: tsrsa forecast frames through hierarchicalforecast's reconcilers.

:func:`reconcile` reads a forecast frame of every node (``predict`` or ``cross_validate`` output), checks
it against the hierarchy, hands hierarchicalforecast one frame per cutoff with the nodes as positions
0..N-1 in the summing matrix's order and the timestamps as positions 0..h-1 (so no id or time dtype can
mislead its joins and sorts), and writes the reconciled values back onto the user's rows.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from tsrsa.data.intervals import check_levels, interval_columns, level_name
from tsrsa.data.native import as_kind, frame_kind, to_pandas
from tsrsa.hierarchy.methods import INSAMPLE_INTERVALS, INTERVAL_METHODS, SPREAD_INTERVALS, method_named

_INTERVAL = re.compile(r"^yhat_(lo|hi)_(\d+(?:\.\d+)?)$")
_QUANTILE = re.compile(r"^yhat_q(\d+(?:\.\d+)?)$")
BASE_SUFFIX = "_base"
CUTOFF_COL = "cutoff"


def reconcile(forecasts: pd.DataFrame, *, hierarchy, df: pd.DataFrame | None = None, method: str = "mint_shrink",
              level=None, intervals_method: str = "normality", seed: int = 0, id_col: str = "unique_id",
              time_col: str = "ds", target_col: str = "y") -> pd.DataFrame:
    """Make the forecasts of every node of a hierarchy add up: each aggregate the sum of its children.

    Parameters
    ----------
    forecasts : DataFrame
        Base forecasts of every node, bottom and aggregate series: id, time, ``yhat``, optionally
        ``yhat_lo_{L}``/``yhat_hi_{L}`` intervals and ``yhat_q..`` quantiles (``predict`` output), or
        ``cross_validate`` output (a ``cutoff`` column: each cutoff is reconciled on its own). Every node
        must have the same timestamps (per cutoff).
    hierarchy : (DataFrame, dict)
        hierarchicalforecast's pair ``(S_df, tags)``: the summing matrix (an id column, ``id_col`` or
        ``unique_id``, then one column per bottom series, bottom rows last forming an identity) and level
        name -> node ids. :func:`tsrsa.aggregate` builds both from bottom-level data.
    df : DataFrame, optional
        In-sample values of every node: id, time, target and, for MinT's residuals, the fitted values in
        ``yhat``: pass ``model.fitted()`` of the forecaster that made ``forecasts`` (one-step-ahead fitted
        values and the target). ``mint_shrink``, ``top_down_average`` and the ``bootstrap``, ``permbu`` and
        ``conformal`` intervals need it. With a ``cutoff`` column only its rows up to each cutoff are read.
        Rows of other series are ignored.
    method : str, default "mint_shrink"
        ``bottom_up``, ``top_down`` (forecast proportions), ``top_down_average`` (average historical
        proportions), ``ols`` (= ``mint_ols``), ``wls_struct``, ``mint_shrink``
        (:mod:`tsrsa.hierarchy.methods` maps them onto hierarchicalforecast's classes).
    level : list of float, optional
        Coverage percentages of reconciled intervals, ``yhat_lo_{L}``/``yhat_hi_{L}``.
    intervals_method : str, default "normality"
        hierarchicalforecast's: ``normality`` (each node's spread read from its base intervals or symmetric
        quantile columns, at any level), ``bootstrap``, ``permbu`` or ``conformal`` (from ``df``'s residuals).
    seed : int, default 0
        Seed of the sampled interval methods.
    id_col, time_col, target_col : str
        The column names of ``forecasts`` and ``df``.

    Returns
    -------
    DataFrame
        ``forecasts``' rows in their order and index, its other columns unchanged; ``yhat`` reconciled, the
        reconciled intervals after it (with ``level``), then every base value column under its name with
        ``_base`` added (``yhat_base``, ``yhat_lo_80_base``, ``yhat_q10_base``): the base intervals and
        quantiles are not reconciled.
    """
    spec = method_named(method)
    kind = frame_kind(forecasts)  # a polars or pyarrow frame: read as pandas, answered in its own kind
    forecasts, df = to_pandas(forecasts), to_pandas(df)
    if not isinstance(forecasts, pd.DataFrame):
        raise TypeError(f"forecasts must be a pandas DataFrame (predict or cross_validate output), got "
                        f"{type(forecasts).__name__}")
    if df is not None and not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame of in-sample values (model.fitted()), got {type(df).__name__}")
    if intervals_method not in INTERVAL_METHODS:
        raise ValueError(f"unknown intervals_method {intervals_method!r}; one of {', '.join(INTERVAL_METHODS)}")
    levels = check_levels(level)
    S, tags, nodes = _read_hierarchy(hierarchy, id_col)
    _require_columns(forecasts, "forecasts", [id_col, time_col, "yhat"], id_col, time_col)
    base_cols = [c for c in forecasts.columns if c == "yhat" or _INTERVAL.match(str(c)) or _QUANTILE.match(str(c))]
    taken = [f"{c}{BASE_SUFFIX}" for c in base_cols if f"{c}{BASE_SUFFIX}" in forecasts.columns]
    if taken:
        raise ValueError(f"forecasts already hold {taken}: reconcile the base forecasts, not an output of reconcile")
    spreads = _spread_columns(forecasts) if levels and intervals_method in SPREAD_INTERVALS else {}
    if levels and intervals_method not in spec.interval_methods:
        raise ValueError(f"method {method!r} gives intervals only with intervals_method in "
                         f"{list(spec.interval_methods)} (got {intervals_method!r})")
    if levels and intervals_method in SPREAD_INTERVALS and not spreads:
        raise ValueError(f"intervals_method={intervals_method!r} reads each node's spread from its base intervals: "
                         f"forecasts need yhat_lo_L/yhat_hi_L columns (predict(level=[80]) of a model fitted with "
                         f"conformal_windows) or symmetric quantile columns (yhat_q10 and yhat_q90); or use "
                         f"intervals_method='bootstrap' with df=model.fitted()")
    needs_target = spec.needs_target or (bool(levels) and intervals_method in INSAMPLE_INTERVALS)
    needs_fitted = spec.needs_fitted or (bool(levels) and intervals_method in INSAMPLE_INTERVALS)
    insample = _read_insample(df, nodes, method, needs_target, needs_fitted, id_col, time_col, target_col)

    node = pd.Index(nodes).get_indexer(forecasts[id_col])  # (n,) row -> node position, -1 outside S
    if (node < 0).any():
        extra = list(dict.fromkeys(forecasts[id_col][node < 0]))[:5]
        raise ValueError(f"forecasts hold ids that are not nodes of the hierarchy (rows of S): {extra}; forecast "
                         f"the series of the hierarchy only, with the ids S names")
    n = len(forecasts)
    values = {"yhat": np.full(n, np.nan)}
    for lv in levels:
        lo, hi = interval_columns(lv)
        values[lo], values[hi] = np.full(n, np.nan), np.full(n, np.nan)
    cutoffs = forecasts[CUTOFF_COL] if CUTOFF_COL in forecasts.columns else pd.Series(0, index=forecasts.index)
    for cutoff, rows in pd.Series(np.arange(n)).groupby(cutoffs.to_numpy(), sort=True):
        rows = rows.to_numpy()
        where = f" at cutoff {cutoff}" if CUTOFF_COL in forecasts.columns else ""
        history = insample
        if history is not None and CUTOFF_COL in forecasts.columns:
            history = insample[insample["ds"] <= cutoff]
        out = _reconcile_group(forecasts.iloc[rows], node[rows], nodes, S, tags, history, spec, levels,
                               intervals_method, spreads, seed, id_col, time_col, where)
        for name, column in out.items():
            values[name][rows] = column
    return as_kind(_output(forecasts, base_cols, values), kind)


def _require_columns(frame: pd.DataFrame, what: str, columns, id_col: str, time_col: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} has no column {missing} (its columns: {list(frame.columns)}); name yours with "
                         f"id_col=, time_col=, target_col= (now {id_col!r}, {time_col!r})")


def _read_hierarchy(hierarchy, id_col: str):
    """(S (N, B) float64, tags as node positions, the N node ids in S's order)."""
    if not (isinstance(hierarchy, (tuple, list)) and len(hierarchy) == 2 and isinstance(hierarchy[0], pd.DataFrame)
            and isinstance(hierarchy[1], dict)):
        raise TypeError(f"hierarchy must be the pair (S_df, tags): the summing matrix frame and a dict of level -> "
                        f"node ids, as tsrsa.aggregate or hierarchicalforecast.utils.aggregate return them; got "
                        f"{type(hierarchy).__name__}")
    S_df, tags = hierarchy
    S_df = to_pandas(S_df)
    key = id_col if id_col in S_df.columns else "unique_id"
    if key not in S_df.columns:
        raise ValueError(f"S_df has no id column {id_col!r} (its columns start {list(S_df.columns)[:4]}): its first "
                         f"column names the nodes")
    nodes = S_df[key].tolist()
    if len(set(nodes)) != len(nodes):
        raise ValueError("S_df names a node twice; each row of S is one node")
    matrix = S_df.drop(columns=[key])
    if not all(pd.api.types.is_numeric_dtype(t) for t in matrix.dtypes):
        raise ValueError("S_df's columns other than the id must be numeric (0/1 per bottom series)")
    index = pd.Index(nodes)
    positions = {}
    for name, ids in tags.items():
        found = index.get_indexer(list(ids))
        if (found < 0).any():
            stray = list(np.asarray(ids)[found < 0])[:5]
            raise ValueError(f"tags[{name!r}] names ids that are not rows of S_df: {stray}")
        positions[name] = found
    return matrix.to_numpy(dtype=np.float64), positions, nodes


def _spread_columns(forecasts: pd.DataFrame) -> dict[str, str]:
    """hierarchicalforecast's ``yhat-lo-L``/``yhat-hi-L`` name -> the forecasts' column giving it: the
    interval columns, then the symmetric quantile pairs (q and 100 - q, a (100 - 2q) % interval)."""
    found = {}
    for col in forecasts.columns:
        match = _INTERVAL.match(str(col))
        if match and f"yhat_{'hi' if match[1] == 'lo' else 'lo'}_{match[2]}" in forecasts.columns:
            found[f"yhat-{match[1]}-{match[2]}"] = col
    quantiles = {float(m[1]): c for c in forecasts.columns if (m := _QUANTILE.match(str(c)))}
    for q, col in quantiles.items():
        if q < 50 and (100 - q) in quantiles:
            name = level_name(100 - 2 * q)
            if f"yhat-lo-{name}" not in found:
                found[f"yhat-lo-{name}"], found[f"yhat-hi-{name}"] = col, quantiles[100 - q]
    return found


def _read_insample(df, nodes, method, needs_target, needs_fitted, id_col, time_col, target_col):
    """The in-sample rows of the nodes as ``unique_id`` (node position), ``ds``, ``y`` (+ ``yhat``); None when
    the method reads none."""
    if not needs_target:
        return None
    what = "in-sample fitted values and the target (residuals)" if needs_fitted else "the in-sample target"
    if df is None:
        raise ValueError(f"method {method!r} (or the interval method) reads {what}: pass df=model.fitted() (id, time, "
                         f"target, yhat), or choose a method that needs none: bottom_up, top_down, ols, wls_struct")
    columns = [id_col, time_col, target_col] + (["yhat"] if needs_fitted else [])
    if needs_fitted and "yhat" not in df.columns:
        raise ValueError(f"df has no fitted values (a 'yhat' column), which method {method!r} (or the interval "
                         f"method) needs for the residuals: pass df=model.fitted(), whose yhat are the one-step-ahead "
                         f"fitted values (its columns: {list(df.columns)})")
    _require_columns(df, "df", columns, id_col, time_col)
    node = pd.Index(nodes).get_indexer(df[id_col])
    frame = pd.DataFrame({"unique_id": node, "ds": df[time_col].to_numpy(), "y": df[target_col].to_numpy(np.float64)})
    if needs_fitted:
        frame["yhat"] = df["yhat"].to_numpy(np.float64)
    frame = frame[(node >= 0) & np.isfinite(frame.drop(columns=["unique_id", "ds"])).all(axis=1).to_numpy()]
    absent = sorted(set(range(len(nodes))) - set(frame["unique_id"]))
    if absent:
        raise ValueError(f"df has no in-sample rows of nodes {[nodes[i] for i in absent][:5]}: it must hold every "
                         f"node of the hierarchy (fit the forecaster on all of them and pass model.fitted())")
    return frame.reset_index(drop=True)


def _reconcile_group(group, node, nodes, S, tags, history, spec, levels, intervals_method, spreads, seed,
                     id_col, time_col, where) -> dict[str, np.ndarray]:
    """Reconcile one cutoff's rows: {column: (rows,) values in the group's row order}."""
    N = len(nodes)
    absent = sorted(set(range(N)) - set(node))
    if absent:
        raise ValueError(f"forecasts lack nodes {[nodes[i] for i in absent][:5]}{where}: reconcile needs a forecast "
                         f"of every node of the hierarchy, bottom and aggregate series")
    times = group[time_col].to_numpy()
    stamps, step = np.unique(times, return_inverse=True)  # step: (rows,) position of each row's time
    counts = np.bincount(node * len(stamps) + step, minlength=N * len(stamps)).reshape(N, len(stamps))
    if (counts > 1).any():
        i, t = np.argwhere(counts > 1)[0]
        raise ValueError(f"forecasts hold node {nodes[i]!r} at {stamps[t]} twice{where}")
    if (counts == 0).any():
        i, t = np.argwhere(counts == 0)[0]
        raise ValueError(f"forecasts have no row of node {nodes[i]!r} at {stamps[t]}{where}, which other nodes "
                         f"have: every node needs the same timestamps")
    hat = pd.DataFrame({"unique_id": node, "ds": step, "yhat": group["yhat"].to_numpy(np.float64)})
    for hf_name, col in spreads.items():
        hat[hf_name] = group[col].to_numpy(np.float64)
    bad = ~np.isfinite(hat.drop(columns=["unique_id", "ds"]).to_numpy()).all(axis=1)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ValueError(f"forecasts hold a missing or infinite value at node {nodes[node[r]]!r}, {times[r]}{where}")
    Y_df = None
    if history is not None:
        Y_df = history.assign(ds=pd.factorize(history["ds"], sort=True)[0])
        if Y_df["unique_id"].nunique() < N:
            raise ValueError(f"df has no in-sample rows of some nodes up to the cutoff{where}")
    S_df = pd.DataFrame(S, columns=[f"b{j}" for j in range(S.shape[1])])
    S_df.insert(0, "unique_id", np.arange(N))
    from hierarchicalforecast.core import HierarchicalReconciliation

    hf_levels = [int(lv) if float(lv).is_integer() else lv for lv in levels]  # as they name its columns
    engine = HierarchicalReconciliation(reconcilers=[spec.build()])
    try:
        out = engine.reconcile(Y_hat_df=hat, S_df=S_df, tags={k: np.asarray(v) for k, v in tags.items()}, Y_df=Y_df,
                               level=hf_levels or None, intervals_method=intervals_method, seed=seed)
    except Exception as error:
        if isinstance(error, (ValueError, TypeError)):
            raise
        # hierarchicalforecast raises a bare Exception for an ill-posed MinT (e.g. residuals all near zero)
        raise ValueError(f"hierarchicalforecast could not reconcile{where}: {error}") from error
    name = next(c for c in out.columns if c.startswith("yhat/") and "-lo-" not in c and "-hi-" not in c)
    at = (out["unique_id"].to_numpy(), out["ds"].to_numpy())
    result = {"yhat": name}
    for lv, hf_lv in zip(levels, hf_levels):
        lo, hi = interval_columns(lv)
        result[lo], result[hi] = f"{name}-lo-{hf_lv}", f"{name}-hi-{hf_lv}"
    columns = {}
    for col, hf_col in result.items():
        grid = np.full((N, len(stamps)), np.nan)
        grid[at] = out[hf_col].to_numpy(np.float64)
        columns[col] = grid[node, step]
    return columns


def _output(forecasts: pd.DataFrame, base_cols: list, values: dict[str, np.ndarray]) -> pd.DataFrame:
    """The forecasts' columns with ``yhat`` and the reconciled intervals in place of the base value columns,
    the base values at the end under ``_base`` names."""
    data = {}
    for col in forecasts.columns:
        if col == "yhat":
            data.update(values)
        elif col not in base_cols:
            data[col] = forecasts[col]
    for col in base_cols:
        data[f"{col}{BASE_SUFFIX}"] = forecasts[col]
    return pd.DataFrame({k: (pd.Series(v, index=forecasts.index) if isinstance(v, np.ndarray) else v)
                         for k, v in data.items()}, index=forecasts.index)
