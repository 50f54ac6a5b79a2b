"""Series ids and timestamps as JSON, the form a saved model's ``state.json`` holds them in.

``encode_index`` / ``decode_index`` keep an id index's dtype (categories and their order included);
``encode_times`` / ``decode_times`` keep a timestamp index's kind (datetimes with their unit and time
zone, or integers). ``jsonable`` is the check that a value can be written as JSON at all.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd


def jsonable(value, what: str):
    """``value`` with tuples as lists; ValueError if JSON cannot hold it."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, np.generic):
        value = value.item()
    try:
        json.dumps(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what}={value!r} cannot be saved as JSON; use plain numbers, strings or lists") from err
    return value


def encode_index(ids: pd.Index) -> dict:
    data = {"dtype": str(ids.dtype), "values": jsonable(ids.tolist(), "series ids")}
    if isinstance(ids.dtype, pd.CategoricalDtype):
        data["categories"] = jsonable(ids.dtype.categories.tolist(), "id categories")
        data["ordered"] = bool(ids.dtype.ordered)
    return data


def decode_index(data: dict) -> pd.Index:
    if data["dtype"] == "category":
        dtype = pd.CategoricalDtype(data["categories"], ordered=data["ordered"])
        return pd.CategoricalIndex(data["values"], dtype=dtype)
    if data["dtype"] == "object":
        return pd.Index(data["values"], dtype=object)
    return pd.Index(data["values"], dtype=data["dtype"])


def encode_times(times: pd.Index) -> dict:
    if isinstance(times, pd.DatetimeIndex):
        return {"kind": "datetime", "dtype": str(times.dtype), "values": [t.isoformat() for t in times]}
    return {"kind": "integer", "dtype": str(times.dtype), "values": [int(t) for t in times]}


def decode_times(data: dict) -> pd.Index:
    if data["kind"] == "integer":
        return pd.Index(np.asarray(data["values"], dtype=data["dtype"]))
    dtype = pd.api.types.pandas_dtype(data["dtype"])
    tz = getattr(dtype, "tz", None)
    times = pd.DatetimeIndex(pd.to_datetime(data["values"], utc=tz is not None, format="ISO8601"))
    if tz is not None:
        times = times.tz_convert(tz)
    return times.as_unit(np.datetime_data(dtype)[0] if tz is None else dtype.unit)
