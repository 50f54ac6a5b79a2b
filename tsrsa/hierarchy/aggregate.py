"""Bottom-level series -> every node of a hierarchy, its summing matrix and its levels.

A thin wrapper of ``hierarchicalforecast.utils.aggregate``: the same spec, the same three results,
in tsrsa's column names. A name of the spec that is not a column and heads every level (``"total"``
in ``[["total"], ["total", "region"], ["total", "region", "store"]]``) is the grand total: the
function adds it as a constant column to its own copy of the frame.
"""
from __future__ import annotations

import pandas as pd


def aggregate(df: pd.DataFrame, spec, *, time_col: str = "ds", target_col: str = "y", id_col: str = "unique_id"):
    """Sum bottom-level series into every node of a hierarchy.

    Parameters
    ----------
    df : DataFrame
        One row per (bottom series, time): ``time_col``, ``target_col`` and one column per name of the
        bottom level of ``spec`` (e.g. ``region``, ``store``) that identify the bottom series.
    spec : list of list of str
        The levels from the top down, each the columns whose values name a node of that level, e.g.
        ``[["total"], ["total", "region"], ["total", "region", "store"]]``; the last level must hold
        every name. A name that is not a column of ``df`` and heads every level is the grand total.
    time_col, target_col, id_col : str
        The time and target columns of ``df``, and the id column of the result.

    Returns
    -------
    (DataFrame, DataFrame, dict)
        ``Y_df``: every node's series (``id_col``, ``time_col``, ``target_col``), ids joined with "/"
        (``total/north/s1``), ready for ``fit``; ``S_df``: the summing matrix, one row per node (aggregates
        first, bottom series last, as ``Y_df``'s ids) and one column per bottom series; ``tags``: level
        name -> the ids of its nodes. ``(S_df, tags)`` is the ``hierarchy`` of :func:`tsrsa.reconcile`.

    Examples
    --------
    >>> import pandas as pd, tsrsa
    >>> sales = pd.DataFrame({"region": ["n", "n", "s", "s"], "store": ["a", "b", "c", "d"],
    ...                       "ds": pd.Timestamp("2024-01-01"), "y": [1.0, 2.0, 3.0, 4.0]})
    >>> Y_df, S_df, tags = tsrsa.aggregate(sales, [["total"], ["total", "region"], ["total", "region", "store"]])
    >>> Y_df["unique_id"].tolist()
    ['total', 'total/n', 'total/s', 'total/n/a', 'total/n/b', 'total/s/c', 'total/s/d']
    >>> Y_df["y"].tolist()
    [10.0, 3.0, 7.0, 1.0, 2.0, 3.0, 4.0]
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame of the bottom-level series, got {type(df).__name__}")
    if (not isinstance(spec, (list, tuple)) or not spec
            or not all(isinstance(level, (list, tuple)) and level and all(isinstance(n, str) for n in level)
                       for level in spec)):
        raise TypeError(f"spec must be a non-empty list of levels, each a non-empty list of column names, e.g. "
                        f"[['total'], ['total', 'region'], ['total', 'region', 'store']]; got {spec!r}")
    for name in (time_col, target_col):
        if name not in df.columns:
            raise ValueError(f"df has no column {name!r} (columns: {list(df.columns)}); set time_col= / target_col=")
    names = list(dict.fromkeys(n for level in spec for n in level))
    missing = [n for n in names if n not in df.columns]
    constant = [n for n in missing if all(level[0] == n for level in spec)]
    unknown = [n for n in missing if n not in constant]
    if unknown:
        raise ValueError(f"spec names {unknown}, which are not columns of df (columns: {list(df.columns)}); only a "
                         f"name heading every level (the grand total, e.g. 'total') may be left out")
    frame = df[[time_col, target_col, *(n for n in names if n in df.columns)]].copy()
    for name in constant:
        frame[name] = name
    from hierarchicalforecast.utils import aggregate as hf_aggregate

    Y_df, S_df, tags = hf_aggregate(frame, [list(level) for level in spec], id_col=id_col, time_col=time_col,
                                    target_cols=(target_col,))
    return Y_df.reset_index(drop=True), S_df.reset_index(drop=True), dict(tags)
