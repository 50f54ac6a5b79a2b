"""Several forecasters used as one: their names, the checks that they read one frame, and their
forecasts side by side.

What :class:`~tsrsa.forecasters.multi.MultiForecaster` and :class:`~tsrsa.forecasters.auto.AutoForecaster`
share:

- ``named_models(models)``: the models a user passes (a list of forecasters, a list of ``(name, model)``
  pairs or a dict) as ``[(name, model)]``; a bare model is named after its class without "Forecaster"
  (``ETSForecaster`` -> ``ETS``); two models of one name are a ValueError;
- ``check_shared(named, ...)``: every model forecasts the same ``h`` and reads the same column names;
- ``renamed(frame, name, keys)``: a forecast frame's ``yhat`` columns under the model's name (``yhat`` ->
  ``ETS``, ``yhat_lo_80`` -> ``ETS_lo_80``, ``yhat_q10`` -> ``ETS_q10``);
- ``side_by_side(frames, keys)``: forecast frames joined on their key columns, one set of columns per model;
- ``panel_frame(panel, spec)``: a validated panel back as a long frame (id, time, target), the form every
  forecaster's ``fit``/``predict(df=...)`` reads.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.data.frames import FrameSpec

#: the parameters that say which columns a forecaster reads and writes
COLUMN_PARAMS = ("id_col", "time_col", "target_col")


def model_name(model) -> str:
    """The column name of a model passed without one: its class name without "Forecaster"."""
    name = type(model).__name__
    return name.removesuffix("Forecaster") or name


def _check_forecaster(model, where: str) -> None:
    from tsrsa.estimator.base import BaseForecaster

    if getattr(type(model), "saves_members", False):
        raise TypeError(f"{where} is a {type(model).__name__}, a set of models itself; pass its models one by one")
    if not isinstance(model, BaseForecaster):
        raise TypeError(f"{where} is {model!r} ({type(model).__name__}), not a tsrsa forecaster: pass forecasters such "
                        f"as tsrsa.ETSForecaster(h=12) or tsrsa.RSAForecaster(h=12)")


def named_models(models, owner: str) -> list[tuple[str, object]]:
    """``models`` (forecasters, ``(name, forecaster)`` pairs, or a dict name -> forecaster) as a list of
    ``(name, forecaster)``, in the order given; TypeError or ValueError naming the fix."""
    if isinstance(models, dict):
        pairs = list(models.items())
    elif isinstance(models, (list, tuple)):
        pairs = []
        for k, item in enumerate(models):
            if isinstance(item, tuple):
                if len(item) != 2:
                    raise ValueError(f"{owner}: models[{k}] is a tuple of {len(item)} items; a named model is a "
                                     f"pair (name, forecaster), e.g. ('ETS', tsrsa.ETSForecaster(h=12))")
                pairs.append(item)
            else:
                _check_forecaster(item, f"{owner}: models[{k}]")
                pairs.append((model_name(item), item))
    else:
        raise TypeError(f"{owner}(models=...) takes a list of forecasters, of (name, forecaster) pairs, or a dict "
                        f"name -> forecaster; got {type(models).__name__}")
    if not pairs:
        raise ValueError(f"{owner}(models=...) is empty; pass at least one forecaster")
    for name, model in pairs:
        if not isinstance(name, str) or not name or not name.isprintable():
            raise ValueError(f"{owner}: model name {name!r} is not a non-empty printable string")
        if name.startswith("yhat") or name in ("cutoff", "step"):
            raise ValueError(f"{owner}: model name {name!r} would clash with the forecast frames' own columns; "
                             f"choose another")
        _check_forecaster(model, f"{owner}: model {name!r}")
    names = [name for name, _ in pairs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{owner}: more than one model is named {', '.join(map(repr, repeated))}; give each its own "
                         f"name: models={{'ETS_additive': ..., 'ETS_auto': ...}} or [('name', model), ...]")
    return pairs


def check_shared(named, owner: str, *, h=None, columns: dict | None = None) -> None:
    """ValueError unless every model of ``named`` forecasts the same horizon (``h`` when given) and reads the
    same column names (``columns``, {param: name}, when given)."""
    first_name, first = named[0]
    want_h = first.h if h is None else h
    want_columns = columns or {param: getattr(first, param) for param in COLUMN_PARAMS}
    for name, model in named:
        if model.h != want_h:
            whose = f"{owner}'s h={h}" if h is not None else f"model {first_name!r} has h={first.h}"
            raise ValueError(f"{owner}: model {name!r} has h={model.h} and {whose}: every model forecasts the same "
                             f"horizon; pass h={want_h} to each")
        for param, value in want_columns.items():
            if getattr(model, param) != value:
                raise ValueError(f"{owner}: model {name!r} has {param}={getattr(model, param)!r} where the others "
                                 f"read {param}={value!r}: every model reads the same frame; pass {param}={value!r}")


def renamed(frame: pd.DataFrame, name: str, keys) -> pd.DataFrame:
    """``frame`` with its forecast columns (``yhat``, ``yhat_*``) named after the model ``name``."""
    return frame.rename(columns={c: name + c[len("yhat"):] for c in frame.columns
                                 if c not in keys and c.startswith("yhat")})


def side_by_side(frames: list[tuple[str, pd.DataFrame]], keys: list[str]) -> pd.DataFrame:
    """The forecast frames of several models joined on ``keys``: the keys, then each model's columns."""
    out = None
    for name, frame in frames:
        part = renamed(frame, name, keys)
        if out is None:
            out = part
            continue
        same = len(part) == len(out) and all(part[k].reset_index(drop=True).equals(out[k].reset_index(drop=True))
                                             for k in keys)
        if same:  # the common case: one frame, the same rows in the same order
            extra = part.drop(columns=[c for c in keys if c in part.columns])
            out = pd.concat([out.reset_index(drop=True), extra.reset_index(drop=True)], axis=1)
        else:
            out = out.merge(part, on=keys, how="outer", sort=False)
    return out


def panel_frame(panel, spec: FrameSpec) -> pd.DataFrame:
    """The validated ``panel`` as a long frame in the user's column names (id, time, target)."""
    times, series = panel.stamps_at(np.arange(len(panel.values)))
    return pd.DataFrame({spec.id_col: panel.ids.take(series), spec.time_col: times,
                         spec.target_col: panel.values})


def rows_of(frame: pd.DataFrame, ids, id_col: str) -> pd.DataFrame:
    """The rows of the long ``frame`` whose id is among ``ids``."""
    return frame[frame[id_col].isin(pd.Index(ids))].reset_index(drop=True)
