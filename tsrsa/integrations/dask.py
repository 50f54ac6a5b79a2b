"""A saved forecaster mapped over partitions of series on Dask (``pip install 'tsrsa[dask]'``).

Prediction and backtests of a fitted model work series by series: each series' forecast reads only
that series (and the model). So a frame of 10^5 to 10^6 series splits into partitions, every series
whole in one partition, and each partition runs on a Dask worker, which reads the model with
:func:`tsrsa.load` once (it keeps the last models it read, keyed by folder and modification time)
and returns its rows. The result equals the single-process call row for row, in the same order.

- :func:`predict_partitions`: ``model.predict(h, df=part, future_df=..., level=...)`` per partition;
  every forecaster, with the saved model's conformal calibration for ``level``.
- :func:`backtest_partitions`: the saved model's forecasts after the last ``n_windows`` cutoffs of
  every series, with no refit (the frame of ``cross_validate``); every forecaster. Its
  single-process form is :func:`backtest`.
- :func:`cross_validate_partitions`: ``model.cross_validate(part, ...)`` per partition, for the
  forecasters that fit each series on its own (ETS, ARIMA, Theta, seasonal naive), without ``level``.

``df`` is a pandas DataFrame (split here into ``n_partitions`` partitions of whole series, sent to the
workers, and the result gathered into one pandas frame), a ``dask.dataframe.DataFrame`` whose
partitions each hold whole series (the result is a lazy dask frame of the same partitions; a series
found in two partitions raises ValueError when it is computed), or a path of Parquet files (read with
``dask.dataframe.read_parquet``, then as a dask frame). Work runs on ``client`` (a
``distributed.Client``), else on the client already running in this process, else on Dask's local
scheduler. ``model_path`` must be readable from every worker (a shared file system on a cluster).

Not mapped: ``update``. An update changes one model (its state and, with intervals, its calibration,
a table pooled over all series); run over partitions it would make one diverging model per
partition. For a fixed-window network, ``predict_partitions`` on each series' recent history (at
least ``input_size`` steps, ending with the new observations) gives what ``update`` then ``predict``
gives, since a known series keeps its fitted statistics at ``predict(df=...)``; intervals then come
from the calibration saved at fit. Nor ``fit``: a network is fitted on all series at once.
"""
from __future__ import annotations

import math
import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.data.validation import check_min_length, format_id

#: most series in one partition when ``n_partitions`` is left to the default
SERIES_PER_PARTITION = 100_000
#: models a worker process keeps loaded (folder, modification time) -> forecaster
CACHE_SIZE = 2
INSTALL_HINT = "pip install 'tsrsa[dask]' (dask[dataframe,distributed])"

_MODELS: dict[tuple, object] = {}
_LOCK = threading.Lock()


# ---------------------------------------------------------------------- single process
def backtest(model, df, *, n_windows: int = 3, step_size: int | None = None, level=None) -> pd.DataFrame:
    """A fitted model's forecasts after the last ``n_windows`` cutoffs of every series, without refit.

    Window w of series i forecasts the ``h`` steps after position ``n_i - h - 1 - (n_windows - 1 - w)
    * step_size``, the cutoffs of ``cross_validate``; unlike ``cross_validate``, no model is fitted:
    the model as it is scores every window (its weights may have seen these values in training).

    Parameters
    ----------
    model : fitted tsrsa forecaster
    df : DataFrame or Series
        The series (as ``predict(df=...)``: a known id keeps its fitted statistics, a new one gets its
        own); each needs the model's look-back + h + (n_windows - 1) * step_size observations.
    n_windows : int, default 3
        Cutoffs per series.
    step_size : int, optional
        Steps between consecutive cutoffs (default ``h``).
    level : list of float, optional
        Conformal intervals from the model's calibration, as ``predict(level=...)``.

    Returns
    -------
    DataFrame
        id, time, ``cutoff``, ``step`` (1..h), the target, ``yhat`` (+ quantile and interval
        columns): the columns of ``cross_validate``, rows by series, cutoff, step.

    Examples
    --------
    >>> import pandas as pd
    >>> from tsrsa import SeasonalNaiveForecaster
    >>> y = pd.Series([1.0, 2.0, 3.0, 1.5, 2.5, 3.5], index=pd.RangeIndex(6))
    >>> model = SeasonalNaiveForecaster(h=1, season_length=3).fit(y)
    >>> backtest(model, y, n_windows=2)
      unique_id  ds  cutoff  step    y  yhat
    0         y   4       3     1  2.5   2.0
    1         y   5       4     1  3.5   3.0
    """
    from tsrsa.estimator.base import quiet
    from tsrsa.estimator.conformal import check_levels, frame_scale, require_calibration
    from tsrsa.estimator.crossval import cutoff_positions
    from tsrsa.estimator.params import check_int

    model.check_is_fitted()
    check_int("n_windows", n_windows)
    check_int("step_size", step_size, allow_none=True)
    levels = check_levels(level)
    if levels:
        require_calibration(model, "backtest").quantiles(levels, int(model.h))
    h = int(model.h)
    step = int(step_size) if step_size is not None else h
    panel = model.to_panel(df, fitted=True)
    look_back = int(model.memory_.tails.shape[1])
    check_min_length(panel, look_back + h + (n_windows - 1) * step,
                     f"the model's look-back ({look_back}), then h={h} + (n_windows - 1) * step_size = "
                     f"{(n_windows - 1) * step} more; lower n_windows or step_size")
    S = panel.n_series
    cutoffs = cutoff_positions(panel.lengths, h, n_windows, step)  # (S, W)
    with quiet(model.verbosity):
        memory = model.memory_.for_frame(model, panel)
        columns = memory.forecast_at(model, panel, cutoffs, h)  # {c: (W * S, h)} window-major
    if levels:
        scale = frame_scale(model, panel, memory)
        columns.update(model.conformal_.intervals(columns["yhat"], np.tile(scale, n_windows), levels))
    ends = (panel.offsets[:-1, None] + cutoffs).ravel()  # (S * W,) series-major
    steps = np.arange(1, h + 1)
    cut_times = panel.stamps_at(ends)[0]
    spec = model.frame_spec
    out = {
        spec.id_col: panel.ids.repeat(n_windows * h),
        spec.time_col: panel.stamps_at((ends[:, None] + steps[None, :]).ravel())[0],
        "cutoff": cut_times.repeat(h),
        "step": np.tile(steps, S * n_windows),
        spec.target_col: panel.values[ends[:, None] + steps[None, :]].ravel(),
    }
    for name, values in columns.items():
        out[name] = values.reshape(n_windows, S, h).transpose(1, 0, 2).reshape(-1)
    return pd.DataFrame(out)


# ---------------------------------------------------------------------- the public maps
def predict_partitions(model_path, df, h: int | None = None, *, level=None, future_df=None, client=None,
                       n_partitions: int | None = None):
    """``predict`` of a saved model over partitions of series (module docstring).

    Parameters
    ----------
    model_path : str or PathLike
        Folder of a model saved with ``model.save(path)``, readable from every worker.
    df : pandas DataFrame, dask DataFrame or str
        Long frame of the series to forecast (the model's id, time and target columns); a dask frame
        must hold each series whole in one partition; a string or path is read as Parquet.
    h : int, optional
        Steps to forecast (default: the trained horizon).
    level : list of float, optional
        Conformal intervals (a model fitted with ``conformal_windows``).
    future_df : pandas DataFrame, optional
        Known-future covariates, as ``predict(future_df=...)``; sent to every worker once, and each
        partition reads the rows of its series.
    client : distributed.Client, optional
        Where to run; default: the running client, else Dask's local scheduler.
    n_partitions : int, optional
        Partitions of a pandas ``df`` (at most one per series); default: one per worker thread, and
        more where a partition would hold over 100,000 series. A dask frame keeps its own.

    Returns
    -------
    DataFrame
        pandas for a pandas ``df`` (rows as ``tsrsa.load(model_path).predict(h, df=df, ...)``),
        else a lazy dask frame.
    """
    if future_df is not None and not isinstance(future_df, pd.DataFrame):
        raise TypeError(f"future_df must be a pandas DataFrame, not {type(future_df).__name__}; compute a "
                        f"dask frame first (future_df.compute())")
    return _mapped("predict", model_path, df, {"h": h, "level": level}, future_df, client, n_partitions)


def backtest_partitions(model_path, df, *, n_windows: int = 3, step_size: int | None = None, level=None,
                        client=None, n_partitions: int | None = None):
    """:func:`backtest` of a saved model over partitions of series; arguments as
    :func:`predict_partitions` and :func:`backtest`. Returns the rows of ``backtest(tsrsa.load(model_path),
    df, ...)``: pandas for a pandas ``df``, else a lazy dask frame."""
    from tsrsa.estimator.params import check_int

    check_int("n_windows", n_windows)
    check_int("step_size", step_size, allow_none=True)
    return _mapped("backtest", model_path, df, {"n_windows": n_windows, "step_size": step_size, "level": level},
                   None, client, n_partitions)


def cross_validate_partitions(model_path, df, *, n_windows: int = 3, step_size: int | None = None, refit=False,
                              client=None, n_partitions: int | None = None):
    """``cross_validate`` of a saved model's parameters over partitions of series.

    Only for forecasters that fit each series on its own (ETS, ARIMA, Theta, seasonal naive): there
    each partition's fits are the single process' fits, and the rows equal
    ``tsrsa.load(model_path).cross_validate(df, ...)``. A network is one model of all series, which a
    partition cannot refit (use :func:`backtest_partitions`, the saved weights at every cutoff); and it
    takes no ``level``, since conformal intervals pool the errors of all series. Other arguments as
    :func:`predict_partitions` and ``cross_validate``.
    """
    from tsrsa.forecasters.naive import SeasonalNaiveForecaster
    from tsrsa.estimator.params import check_int
    from tsrsa.estimator.statistical import StatisticalForecaster

    check_int("n_windows", n_windows)
    check_int("step_size", step_size, allow_none=True)
    model = _cached_model(_checked_path(model_path))
    if not isinstance(model, (StatisticalForecaster, SeasonalNaiveForecaster)):
        raise ValueError(f"cross_validate_partitions refits per partition, and a {type(model).__name__} is fitted "
                         f"on all series at once, so a partition's refit would differ from one over all series; "
                         f"use backtest_partitions (the saved model at every cutoff, no refit) or "
                         f"model.cross_validate in one process")
    options = {"n_windows": n_windows, "step_size": step_size, "refit": refit}
    return _mapped("cross_validate", model_path, df, options, None, client, n_partitions)


# ---------------------------------------------------------------------- on a worker
def _cached_model(path: str):
    """``tsrsa.load(path)``, read once per worker process while the folder is unchanged."""
    from tsrsa.forecasters import load

    stamp = max((entry.stat().st_mtime_ns for entry in os.scandir(path)), default=0)
    key = (path, stamp)
    with _LOCK:  # a worker's threads share the cache
        if key not in _MODELS:
            model = load(path)
            while len(_MODELS) >= CACHE_SIZE:
                _MODELS.pop(next(iter(_MODELS)))
            _MODELS[key] = model
        return _MODELS[key]


def _run_partition(part: pd.DataFrame, model_path: str, method: str, options: dict, future_df=None,
                   meta=None, *ready) -> pd.DataFrame:
    """One partition's rows: the method of the saved model on the series of ``part``."""
    model = _cached_model(model_path)
    id_col = model.id_col
    if id_col not in part.columns and part.index.name == id_col:
        part = part.reset_index()
    if meta is not None and len(part) == 0:
        return meta
    if method == "predict":
        future = None if future_df is None else future_df[future_df[id_col].isin(part[id_col].unique())]
        out = model.predict(options["h"], df=part, future_df=future, level=options["level"])
    elif method == "backtest":
        out = backtest(model, part, **options)
    else:
        out = model.cross_validate(part, **options)
    return out.reset_index(drop=True)


def _check_whole(ids: list) -> bool:
    """True, or ValueError naming a series found in two partitions of a dask frame."""
    every = pd.Index(np.concatenate([np.asarray(part, dtype=object) for part in ids]))  # unique within a part
    twice = np.flatnonzero(every.duplicated(keep=False))
    if twice.size:
        value = every[twice[0]]
        parts = np.repeat(np.arange(len(ids)), [len(part) for part in ids])[every == value]
        raise ValueError(f"series {format_id(value)} is in partitions {parts[0]} and {parts[1]} of the dask frame; "
                         f"each series must be whole in one partition: repartition by series, e.g. "
                         f"df.shuffle(on=id_col) or df.set_index(id_col)")
    return True


# ---------------------------------------------------------------------- mapping
def _checked_path(model_path) -> str:
    if not isinstance(model_path, (str, os.PathLike)):
        raise TypeError(f"model_path must be the folder of a saved model (str or path), not "
                        f"{type(model_path).__name__}: save a fitted model with model.save(path) and pass path")
    path = Path(model_path).resolve()
    if not path.is_dir():
        raise ValueError(f"{model_path} is not a directory holding a saved tsrsa model: save one with "
                         f"model.save(path) and pass that folder")
    return str(path)


def _mapped(method: str, model_path, df, options: dict, future_df, client, n_partitions):
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as error:
        raise ImportError(f"the partition maps run on Dask: {INSTALL_HINT}") from error
    from tsrsa.estimator.params import check_int

    path = _checked_path(model_path)
    model = _cached_model(path)  # refuses a folder that is no saved model, here and not on a worker
    client = _resolved_client(client)
    check_int("n_partitions", n_partitions, allow_none=True)
    if isinstance(df, (str, os.PathLike)):
        df = dd.read_parquet(df)
    if isinstance(df, dd.DataFrame):
        if n_partitions is not None:
            raise ValueError("n_partitions splits a pandas frame; a dask frame keeps its own partitions "
                             "(repartition it by series first, e.g. df.shuffle(on=id_col))")
        return _mapped_dask(dask, df, model, path, method, options, future_df)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, a dask DataFrame or a path of Parquet files, not "
                        f"{type(df).__name__}")
    _check_columns(df.columns, model, df.index.name)
    pieces = _split(df, model.id_col, n_partitions, _threads(client))
    _sample_run(pieces[0], model, path, method, options, future_df)  # bad arguments refused here, at once
    if client is not None:
        future = None if future_df is None else client.scatter(future_df, broadcast=True)
        tasks = client.map(_run_partition, client.scatter(pieces), model_path=path, method=method,
                           options=options, future_df=future, pure=False)
        results = client.gather(tasks)
    else:
        results = dask.compute(*[dask.delayed(_run_partition)(p, path, method, options, future_df)
                                 for p in pieces])
    return pd.concat(results, ignore_index=True)


def _sample_run(part: pd.DataFrame, model, path: str, method: str, options: dict, future_df) -> pd.DataFrame:
    """The method on the first series of ``part``, in this process: its empty frame is the columns and
    dtypes of every partition's result, and a bad argument fails here rather than on every worker."""
    ids = part[model.id_col] if model.id_col in part.columns else part.index.to_series()
    return _run_partition(part[(ids == ids.iloc[0]).to_numpy()], path, method, options, future_df).iloc[:0]


def _mapped_dask(dask, df, model, path: str, method: str, options: dict, future_df):
    id_col = model.id_col
    _check_columns(df.columns, model, df.index.name)
    first = next((p for p in (df.get_partition(i).compute() for i in range(df.npartitions)) if len(p)), None)
    if first is None:
        raise ValueError("the dask frame holds no rows")
    meta = _sample_run(first, model, path, method, options, future_df)
    ready = []
    if not (df.known_divisions and df.index.name == id_col):  # an index sorted by id keeps series whole
        column = df[id_col] if id_col in df.columns else df.index.to_series()
        ready = [dask.delayed(_check_whole)([dask.delayed(pd.unique)(p) for p in column.to_delayed()])]
    future = None if future_df is None else dask.delayed(future_df)
    return df.map_partitions(_run_partition, path, method, options, future, meta, *ready, meta=meta,
                             enforce_metadata=False, align_dataframes=False)


def _resolved_client(client):
    if client is None:
        try:
            from distributed import default_client

            return default_client()
        except (ImportError, ValueError):  # no distributed, or no client running: Dask's local scheduler
            return None
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be a distributed.Client (or None for the running one), not "
                        f"{type(client).__name__}")
    return client


def _threads(client) -> int:
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def _check_columns(columns, model, index_name) -> None:
    spec = model.frame_spec
    missing = [c for c in (spec.id_col, spec.time_col, spec.target_col)
               if c not in columns and not (c == spec.id_col and index_name == c)]
    if missing:
        raise ValueError(f"df has no column {missing[0]!r}; the saved model reads a long frame of columns "
                         f"{spec.id_col!r}, {spec.time_col!r}, {spec.target_col!r} (its id_col, time_col, "
                         f"target_col)")


def _split(df: pd.DataFrame, id_col: str, n_partitions: int | None, threads: int) -> list[pd.DataFrame]:
    """``df``'s rows in partitions of whole series, by blocks of ids in sorted order (the model's)."""
    ids = df[id_col] if id_col in df.columns else df.index.to_series()
    try:
        codes, uniques = pd.factorize(ids, sort=True)
    except TypeError:  # ids of mixed types cannot be sorted: the model keeps their order too
        codes, uniques = pd.factorize(ids, sort=False)
    n = len(uniques)
    if n == 0:
        raise ValueError("df holds no rows to forecast")
    wanted = n_partitions if n_partitions is not None else max(threads, math.ceil(n / SERIES_PER_PARTITION))
    P = min(int(wanted), n)
    part = (np.arange(n) * P // n)[codes]  # contiguous blocks of sorted ids
    if (np.diff(part) >= 0).all():  # rows already grouped in that order: slices, no sort
        bounds = np.searchsorted(part, np.arange(P + 1))
        return [df.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(P + 1))
    return [df.iloc[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]
