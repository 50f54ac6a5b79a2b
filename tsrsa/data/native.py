"""Frames other than pandas in, the same kind of frame out: polars and pyarrow through narwhals.

A forecaster reads pandas (:mod:`tsrsa.data.frames`). A long frame of another library that narwhals
reads eagerly (a polars ``DataFrame``, a pyarrow ``Table``, ...) is converted to pandas on the way in
(``to_pandas``), and what the call returns is converted back to that library (``as_kind``); the
computation in between is the pandas one, so the numbers are the same bit for bit. pandas objects,
Parquet shards and anything narwhals does not know pass through untouched (the pandas validation
then names what is wrong). A lazy frame is refused: it has no rows until it is collected.

narwhals is imported only when a frame is not pandas, so pandas users never pay for it.
"""
from __future__ import annotations

import pandas as pd

#: the kind of frame of pandas input, and of everything that is not converted
PANDAS = "pandas"


def _narwhals_frame(obj):
    """narwhals' eager DataFrame over ``obj``, or None when ``obj`` is pandas or not a frame narwhals reads."""
    if obj is None or isinstance(obj, (pd.DataFrame, pd.Series)):
        return None
    module = type(obj).__module__.split(".")[0]
    if module not in ("polars", "pyarrow", "modin", "cudf", "duckdb", "ibis", "dask", "pyspark", "sqlframe"):
        return None  # numpy arrays, lists, dicts: the pandas validation names the type
    import narwhals as nw

    frame = nw.from_native(obj, pass_through=True)
    if isinstance(frame, nw.LazyFrame):
        raise TypeError(f"got a lazy {type(obj).__module__}.{type(obj).__name__}: its rows do not exist until it "
                        f"is collected; pass df.collect() (an eager DataFrame)")
    return frame if isinstance(frame, nw.DataFrame) else None


def frame_kind(obj) -> str:
    """The library of a frame ("polars", "pyarrow", ...), or :data:`PANDAS` for pandas and the rest."""
    frame = _narwhals_frame(obj)
    return PANDAS if frame is None else frame.implementation.value


def to_pandas(obj):
    """``obj`` as a pandas DataFrame when it is another library's eager frame; otherwise ``obj`` itself.

    The user's frame is not modified (the conversion copies)."""
    frame = _narwhals_frame(obj)
    return obj if frame is None else frame.to_pandas()


def as_kind(frame: pd.DataFrame, kind: str):
    """A pandas frame returned by a call, as the library ``kind`` (:func:`frame_kind`) the call was given.

    The index is dropped (a long frame's rows are numbered 0..n-1): polars and pyarrow have none."""
    if kind == PANDAS:
        return frame
    import narwhals as nw

    converted = nw.from_native(frame.reset_index(drop=True), eager_only=True)
    if kind == "polars":
        return converted.to_polars()
    if kind == "pyarrow":
        return converted.to_arrow()
    raise ValueError(f"forecasts cannot be returned as a {kind} frame; pass a pandas, polars or pyarrow frame")
