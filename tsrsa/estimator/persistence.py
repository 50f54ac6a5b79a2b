"""Saving and loading fitted forecasters as a directory of plain, checked files.

Layout of a saved model::

    config.json   format version, class name, get_params(), package versions, the checksums of
                  the other files, and its own (of its content without that field)
    state.json    fitted state without data: frequency, ids, last timestamps, history, ...
    arrays.npz    the last values of each series and their scaling statistics, in the streaming
                  configuration every series' recurrent state, and for a model fitted with
                  ``conformal_windows`` its calibration ("conformal.residuals", "conformal.scale")
                  (no pickle); a statistical forecaster's per-series parameters and filter states
                  ("statistical.*", their forms in state.json's "statistical")
    weights.pt    network weights, a flat dict of tensors (torch.load(weights_only=True)-safe)

Format versions: 1, the first; 2 adds the streaming configuration (the state's "stream" entry
and its arrays) and the network configuration's ``stream`` field; 3 adds covariates (the covariate
parameters, the state's "covariates" encoder, the arrays "covariates", "static_num", "static_cat"
and the network configuration's ``covariates`` layout); 4 adds config.json's checksum of itself
(``config_sha256``), so that every file of a model is covered. ``MIGRATIONS`` brings a file of an
earlier version up to the current one as it is loaded. The conformal calibration arrays and the
``conformal_windows`` parameter are optional within format 4: a file without them loads as a model
without intervals. Parameters renamed within a format are the class's to fold (``upgrade_params``): a
neural model saved before 0.15 names its trainer's options one by one (``"num_threads": null``), one
saved since holds them in one object (``"trainer": {"accelerator": "auto", ...}``); both load, silently.

``save`` writes the whole folder or nothing (:mod:`tsrsa.estimator.model_folder`): into a new or
empty folder, or over a saved tsrsa model with ``overwrite=True``, never into a folder that holds
other files. ``load_model`` instantiates only the forecaster classes it is given (``tsrsa.load``: tsrsa's
own, ``tsrsa.forecasters.FORECASTERS``; a whitelist, no class path is ever read from the file); whether
a model has network weights is the class's ``saves_weights``. It checks every file against its checksum and the parameters against
what the other files record (:mod:`tsrsa.estimator.saved_checks`; for files of formats 1 to 3,
whose config.json has no checksum, this is what catches an edited one), and turns anything
unreadable, edited or inconsistent into a ``ValueError`` that names the file.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import platform
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.data.index_encoding import jsonable
from tsrsa.data.shard_manifest import sha256 as _sha256  # a file's SHA-256, read a megabyte at a time
from tsrsa.estimator.model_folder import (
    ARRAYS, CONFIG, CONFIG_LIMIT, RESTORE, STATE, WEIGHTS, folder_path, read_model_file, write_folder,
)

FORMAT_VERSION = 4
_DATA_FILES = (STATE, ARRAYS, WEIGHTS)
#: the field of config.json that holds the checksum of the rest of it (format 4 on)
CONFIG_CHECKSUM = "config_sha256"


def _versions() -> dict:
    import torch

    from tsrsa._version import __version__

    return {"tsrsa": __version__, "torch": torch.__version__, "numpy": np.__version__,
            "pandas": pd.__version__, "python": platform.python_version()}


#: parameters that belong to the session that trains, not to the model: saved as None (callbacks)
#: or as text (a folder path); since 0.15 options of ``trainer``, which saves them so
RUNTIME_PARAMS = ("callbacks", "checkpoint_dir")


def saved_param(name: str, value, cls=None):
    """What a saved model keeps of parameter ``name``: the value, but an option group (of ``cls``'s
    ``option_groups``; without ``cls``, the trainer and any group's instance) as the JSON object of its options
    (:meth:`~tsrsa.estimator.option_groups.OptionGroup.saved`: a trainer without callbacks, code of the session
    that trained it, which a load elsewhere cannot run, and with its checkpoint folder as text; None, the
    defaults, as null)."""
    from tsrsa.estimator.option_groups import OptionGroup

    groups = cls.option_groups if cls is not None else {}
    if name in groups:
        return groups[name].saved(value, name)
    if name == "trainer":
        from tsrsa.estimator.trainer import saved_trainer

        return saved_trainer(value)
    if isinstance(value, OptionGroup):
        return type(value).saved(value, name)
    if name == "callbacks":  # a parameter of its own before 0.15
        return None
    if name == "checkpoint_dir" and value is not None:
        return str(value)
    return value


# ---------------------------------------------------------------------- save
def config_checksum(config: dict) -> str:
    """The SHA-256 of ``config`` without its own checksum field, written as canonical JSON (sorted
    keys, no spaces): what ``save`` records in config.json's ``config_sha256``."""
    content = {key: value for key, value in config.items() if key != CONFIG_CHECKSUM}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def save(estimator, path, *, overwrite: bool = False) -> None:
    """Write ``estimator`` (fitted) to the folder ``path``, all or nothing.

    ``path`` is a new folder (missing parent folders are created) or an empty one; a folder that
    holds a saved tsrsa model is replaced whole with ``overwrite=True``; any other folder is refused
    with a ValueError before anything is written. A save that raises leaves ``path`` as it was.
    """
    import torch

    from tsrsa.estimator.params import check_bool

    estimator.check_is_fitted()
    check_bool("overwrite", overwrite)
    params = {k: jsonable(saved_param(k, v, type(estimator)), k) for k, v in estimator.get_params().items()}
    state, arrays, weights = estimator.fitted_files()
    config = {"format_version": FORMAT_VERSION, "class": type(estimator).__name__, "params": params,
              "versions": _versions()}

    def write(folder: Path) -> None:
        (folder / STATE).write_text(json.dumps(state, indent=1))
        with open(folder / ARRAYS, "wb") as handle:
            np.savez(handle, **arrays)
        files = [STATE, ARRAYS]
        if weights is not None:
            torch.save({k: v.detach().cpu().contiguous() for k, v in weights.items()}, folder / WEIGHTS)
            files.append(WEIGHTS)
        written = {**config, "files": {name: _sha256(folder / name) for name in files},
                   "sizes": {name: os.path.getsize(folder / name) for name in files}}
        written[CONFIG_CHECKSUM] = config_checksum(written)
        (folder / CONFIG).write_text(json.dumps(written, indent=1))

    write_folder(path, write, overwrite=overwrite)


# ---------------------------------------------------------------------- load
def check_device(device):
    """The ``torch.device`` that ``device`` names when this machine has it; ValueError otherwise."""
    import torch

    try:
        target = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise ValueError(f"device={device!r} names no torch device ({err}); use 'cpu', 'cuda', 'cuda:N' or 'mps'") \
            from None
    if target.type == "cpu":
        return target
    if target.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {str(device)!r} is not available here: torch.cuda.is_available() is False; "
                             f"load with device='cpu'")
        count = torch.cuda.device_count()
        if target.index is not None and target.index >= count:
            raise ValueError(f"device {str(device)!r} is not available here: torch sees {count} CUDA device(s), "
                             f"cuda:0 to cuda:{count - 1}; load with one of them or with device='cpu'")
        return target
    if target.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {str(device)!r} is not available here: torch.backends.mps.is_available() is "
                             f"False; load with device='cpu'")
        return target
    raise ValueError(f"device {str(device)!r}: a model loads on 'cpu', 'cuda', 'cuda:N' or 'mps'")


def _read_json(path: Path, content: bytes | None = None) -> dict:
    """The JSON object of ``content``, or of the file ``path`` (config.json: at most ``CONFIG_LIMIT`` bytes
    of a regular file of the folder)."""
    try:
        data = json.loads(read_model_file(path.parent, path.name, limit=CONFIG_LIMIT) if content is None
                          else content)
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


def _from_v3(config: dict, state: dict) -> None:
    """Format 3 -> 4: format 4 adds config.json's checksum of itself, checked before any migration;
    the content is the same, so nothing changes (a file of format 3 is checked by consistency alone)."""


#: version -> the function that brings a file of that version to the next one (in place)
MIGRATIONS = {1: _from_v1, 2: _from_v2, 3: _from_v3}

_RESTORE = RESTORE


def _check_files(directory: Path, config: dict, version: int, name: str, needs_weights: bool) -> tuple[dict, dict]:
    """config.json's own checksum (format 4 on) and those of the other files, read within their recorded
    sizes (:func:`~tsrsa.estimator.model_folder.read_model_file`); the checked file list and the bytes
    of each file."""
    recorded = config.get(CONFIG_CHECKSUM)
    if version >= 4 and recorded != config_checksum(config):
        what = "has no checksum of its own" if recorded is None else "does not match the checksum recorded at saving"
        raise ValueError(f"{directory / CONFIG} {what}: it was modified or corrupted; {_RESTORE}")
    if version < 4 and recorded is not None:
        raise ValueError(f"{directory / CONFIG} says format {version}, which has no {CONFIG_CHECKSUM}: it was "
                         f"modified; {_RESTORE}")
    files = config.get("files")
    if not isinstance(files, dict) or STATE not in files or ARRAYS not in files:
        raise ValueError(f"{directory / CONFIG} is corrupted: its file list is incomplete")
    sizes = config.get("sizes", {})  # recorded by saves since sizes were added; none in older folders
    if not isinstance(sizes, dict) or any(isinstance(size, bool) or not isinstance(size, int) or size < 0
                                          for size in sizes.values()):
        raise ValueError(f"{directory / CONFIG} is corrupted: its file sizes are not byte counts")
    contents = {}
    for file, digest in files.items():
        if file not in _DATA_FILES:
            raise ValueError(f"{directory / CONFIG} lists an unexpected file {file!r}")
        if not isinstance(digest, str):
            raise ValueError(f"{directory / CONFIG} is corrupted: the checksum of {file} is not text")
        try:
            contents[file] = read_model_file(directory, file, size=sizes.get(file), digest=digest)
        except FileNotFoundError:
            raise ValueError(f"{directory / file} is missing; {_RESTORE}") from None
    if needs_weights != (WEIGHTS in files):
        has = "has network weights" if needs_weights else "has no network"
        raise ValueError(f"{directory / CONFIG} {'lists no' if needs_weights else 'lists'} {WEIGHTS}, but a {name} "
                         f"{has}; {_RESTORE}")
    for file in _DATA_FILES:
        if file not in files and os.path.lexists(directory / file):
            raise ValueError(f"{directory / file} is not part of the {name} saved in {directory} (a file left "
                             f"from another model): remove it, or save the model again into a new folder")
    return files, contents


def load_model(path, forecasters, *, device: str = "cpu"):
    """Load a forecaster saved with ``save``, of one of the classes ``forecasters`` (the whitelist: the
    class config.json names is looked up among them by name, never imported); its network goes to
    ``device`` (CPU by default). ``tsrsa.load`` calls this with tsrsa's own forecaster classes, and its
    docstring lists what is refused (each a ValueError naming the file).
    """
    import torch

    from tsrsa.estimator.saved_checks import check_consistent

    target = check_device(device)
    directory = folder_path(path)
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory holding a saved tsrsa model")
    config = _read_json(directory / CONFIG)
    version = config.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{directory / CONFIG} is corrupted: no valid format_version")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{directory} was saved in format {version} by a newer tsrsa; this tsrsa reads up to "
            f"format {FORMAT_VERSION}: upgrade tsrsa to load it"
        )
    name = config.get("class")
    whitelist = {forecaster.__name__: forecaster for forecaster in forecasters}
    cls = whitelist.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"{directory / CONFIG} names class {name!r}, which is not a tsrsa forecaster")
    if getattr(cls, "saves_members", False):  # a set of models: a folder per model (tsrsa.estimator.set_folder)
        return cls.from_folder(directory, config, lambda folder: load_model(folder, forecasters, device=device))
    files, contents = _check_files(directory, config, version, name, cls.saves_weights)
    state = _read_json(directory / STATE, contents[STATE])
    try:
        for old in range(version, FORMAT_VERSION):
            MIGRATIONS[old](config, state)
        # parameters renamed since the folder was saved (0.14's num_threads=2: trainer={"num_threads": 2}),
        # folded silently: the user chose nothing old, the folder did
        estimator = cls(**cls.upgrade_params(config["params"]))
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{directory / CONFIG} holds parameters that {name} does not take ({err})") from err
    try:
        with np.load(io.BytesIO(contents[ARRAYS]), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as err:  # zip and format errors of every kind
        raise ValueError(f"{directory / ARRAYS} is unreadable or corrupted ({err})") from err
    weights = None
    if WEIGHTS in files:
        try:
            weights = torch.load(io.BytesIO(contents[WEIGHTS]), map_location=target, weights_only=True)
        except Exception as err:  # unpickling refuses anything but tensors
            raise ValueError(f"{directory / WEIGHTS} is unreadable or corrupted ({err})") from err
    try:
        estimator.adopt_plan(state)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"{directory / STATE} holds a fit plan that cannot be read ({err}); {_RESTORE}") from err
    try:
        check_consistent(directory, estimator, state, arrays)
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(f"{directory / STATE} does not describe a fitted {name} ({err!r})") from err
    try:
        estimator.restore_fitted(state, arrays, weights, target)
    except RuntimeError as err:
        if weights is not None and "state_dict" in str(err):
            reason = " ".join(str(err).split())[:300]
            raise ValueError(f"{directory / WEIGHTS} does not match the network that {directory / STATE} "
                             f"describes ({reason}); {_RESTORE}") from err
        raise ValueError(f"{directory / STATE} does not describe a fitted {name} ({err})") from err
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise ValueError(f"{directory / STATE} does not describe a fitted {name} ({err})") from err
    return estimator
