"""Saving and loading fitted forecasters as a directory of plain, checked files.

Layout of a saved model::

    config.json   format version, class name, get_params(), package versions, file checksums
    state.json    fitted state without data: frequency, ids, last timestamps, history, ...
    arrays.npz    the last values of each series and their scaling statistics, and in the streaming
                  configuration every series' recurrent state (no pickle)
    weights.pt    network weights, a flat dict of tensors (torch.load(weights_only=True)-safe)

Format versions: 1, the first; 2 adds the streaming configuration (the state's "stream" entry
and its arrays) and the network configuration's ``stream`` field; 3 adds covariates (the covariate
parameters, the state's "covariates" encoder, the arrays "covariates", "static_num", "static_cat"
and the network configuration's ``covariates`` layout). ``MIGRATIONS`` brings a file of
an earlier version up to the current one as it is loaded.

``load`` instantiates only tsrsa's own forecaster classes (a whitelist; no class path is
ever read from the file), checks every file against its checksum and turns anything
unreadable into a ``ValueError`` that names the file.
"""
from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import numpy as np
import pandas as pd

FORMAT_VERSION = 3
CONFIG, STATE, ARRAYS, WEIGHTS = "config.json", "state.json", "arrays.npz", "weights.pt"
_DATA_FILES = (STATE, ARRAYS, WEIGHTS)


def _whitelist() -> dict[str, type]:
    from tsrsa.forecasters import FORECASTERS

    return {cls.__name__: cls for cls in FORECASTERS}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _versions() -> dict:
    import torch

    from tsrsa._version import __version__

    return {"tsrsa": __version__, "torch": torch.__version__, "numpy": np.__version__,
            "pandas": pd.__version__, "python": platform.python_version()}


def _jsonable(value, what: str):
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


# ---------------------------------------------------------------------- ids and timestamps
def encode_index(ids: pd.Index) -> dict:
    data = {"dtype": str(ids.dtype), "values": _jsonable(ids.tolist(), "series ids")}
    if isinstance(ids.dtype, pd.CategoricalDtype):
        data["categories"] = _jsonable(ids.dtype.categories.tolist(), "id categories")
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
    times = pd.DatetimeIndex(pd.to_datetime(data["values"], utc=tz is not None))
    if tz is not None:
        times = times.tz_convert(tz)
    return times.as_unit(np.datetime_data(dtype)[0] if tz is None else dtype.unit)


# ---------------------------------------------------------------------- save / load
def save(estimator, path) -> None:
    """Write ``estimator`` (fitted) to the directory ``path``, created if needed."""
    import torch

    estimator._check_is_fitted()
    params = {k: _jsonable(v, k) for k, v in estimator.get_params().items()}
    state, arrays, weights = estimator._fitted_state()
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / STATE).write_text(json.dumps(state, indent=1))
    with open(directory / ARRAYS, "wb") as handle:
        np.savez(handle, **arrays)
    files = [STATE, ARRAYS]
    if weights is not None:
        torch.save({k: v.detach().cpu().contiguous() for k, v in weights.items()}, directory / WEIGHTS)
        files.append(WEIGHTS)
    config = {
        "format_version": FORMAT_VERSION,
        "class": type(estimator).__name__,
        "params": params,
        "versions": _versions(),
        "files": {name: _sha256(directory / name) for name in files},
    }
    (directory / CONFIG).write_text(json.dumps(config, indent=1))


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise ValueError(f"{path} is missing: this is not a model saved by tsrsa") from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is unreadable or corrupted ({err})") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path} is corrupted: expected a JSON object")
    return data


def _from_v1(config: dict, state: dict) -> None:
    """Format 1 -> 2: a model of format 1 never streams (format 2 added the streaming configuration)."""
    if config["class"] in ("TransformerForecaster", "RSAForecaster"):
        config["params"].setdefault("stream", False)
        state["network"].setdefault("stream", False)


def _from_v2(config: dict, state: dict) -> None:
    """Format 2 -> 3: a model of format 2 reads no covariates; the parameters' and the network
    configuration's defaults (none declared, an empty layout) say exactly that, so nothing changes."""


#: version -> the function that brings a file of that version to the next one (in place)
MIGRATIONS = {1: _from_v1, 2: _from_v2}


def load(path, *, device: str = "cpu"):
    """Load a forecaster saved with ``save``; its network goes to ``device`` (CPU by default).

    Raises
    ------
    ValueError
        When the directory is not a saved tsrsa model, a file is missing, unreadable,
        corrupted or modified after saving, or the class is not a tsrsa forecaster.
    """
    import torch

    directory = Path(path)
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory holding a saved tsrsa model")
    config = _read_json(directory / CONFIG)
    version = config.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"{directory / CONFIG} is corrupted: no valid format_version")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{directory} was saved in format {version} by a newer tsrsa; this tsrsa reads up to "
            f"format {FORMAT_VERSION}: upgrade tsrsa to load it"
        )
    name = config.get("class")
    cls = _whitelist().get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"{directory / CONFIG} names class {name!r}, which is not a tsrsa forecaster")
    files = config.get("files")
    if not isinstance(files, dict) or STATE not in files or ARRAYS not in files:
        raise ValueError(f"{directory / CONFIG} is corrupted: its file list is incomplete")
    for file, digest in files.items():
        if file not in _DATA_FILES:
            raise ValueError(f"{directory / CONFIG} lists an unexpected file {file!r}")
        target = directory / file
        if not target.is_file():
            raise ValueError(f"{target} is missing")
        if _sha256(target) != digest:
            raise ValueError(f"{target} does not match the checksum recorded at saving: it was modified or corrupted")
    state = _read_json(directory / STATE)
    try:
        for old in range(version, FORMAT_VERSION):
            MIGRATIONS[old](config, state)
        estimator = cls(**config["params"])
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{directory / CONFIG} holds parameters that {name} does not take ({err})") from err
    try:
        with np.load(directory / ARRAYS, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as err:  # zip and format errors of every kind
        raise ValueError(f"{directory / ARRAYS} is unreadable or corrupted ({err})") from err
    weights = None
    if WEIGHTS in files:
        try:
            weights = torch.load(directory / WEIGHTS, map_location=device, weights_only=True)
        except Exception as err:  # unpickling refuses anything but tensors
            raise ValueError(f"{directory / WEIGHTS} is unreadable or corrupted ({err})") from err
    try:
        estimator._restore_fitted_state(state, arrays, weights, torch.device(device))
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{directory / STATE} does not describe a fitted {name} ({err})") from err
    return estimator
