"""Whether the files of a saved model agree with one another, before the model is rebuilt from them.

The checksums of format 4 cover every file, config.json included; a file of an earlier format has
none for config.json. For both, the parameters that config.json holds are compared with what the
other files record: the network configuration that state.json saved (what the parameters would
build, field by field), the look-back the arrays hold (``input_size``, a naive model's season),
the series the arrays hold against the ids, the declared covariates against the saved
encoding, and a conformal calibration (optional arrays) against the horizon and the series. An
edited ``d_model``, ``input_size``, ``h``, ``loss`` or covariate name is refused here, with the
file and the fix, instead of loading with parameters that no longer match the network or
failing inside numpy or torch at predict time.

Some fields of the network configuration are chosen from the data by ``fit`` and have no
parameter to compare with: the REM dilations of ``rem_init="data"``, ``readout_tokens="auto"``
and the covariate layout (which the encoding check covers).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from tsrsa.estimator.model_folder import ARRAYS, CONFIG, STATE, WEIGHTS

#: attention options a fit chooses from the data (with rem_init="data")
_FROM_DATA_OPTIONS = ("dilations",)


def _plain(value):
    """``value`` as JSON reads it back (tuples as lists), for comparison with a saved file."""
    return json.loads(json.dumps(value))


def _edited(directory: Path, what: str) -> ValueError:
    return ValueError(
        f"{directory / CONFIG} does not match the model saved beside it: {what}; config.json was edited after "
        f"saving or belongs to another model: restore the config.json saved with the other files, or fit and "
        f"save the model again")


def _unreadable(directory: Path, err: Exception) -> ValueError:
    return ValueError(f"{directory / CONFIG} holds parameters that describe no fitted model ({err}); restore the "
                      f"config.json saved with the other files, or fit and save the model again")


def check_consistent(directory: Path, estimator, state: dict, arrays: dict) -> None:
    """ValueError naming the file when the parameters of ``estimator`` (from config.json) disagree with
    ``state`` (state.json, migrated) or ``arrays`` (arrays.npz)."""
    _check_arrays(directory, estimator, state, arrays)
    _check_conformal(directory, estimator, state, arrays)
    _check_covariates(directory, estimator, state)
    if "network" in state:
        _check_network(directory, estimator, state["network"])


def _check_arrays(directory: Path, estimator, state: dict, arrays: dict) -> None:
    tails = arrays.get("tails")
    if not isinstance(tails, np.ndarray) or tails.ndim != 2:
        raise ValueError(f"{directory / ARRAYS} holds no 2-D 'tails' array: it does not describe a fitted model")
    if "statistical" in state:  # per-series models, checked against the ids by StatisticalState.from_files
        return
    n_ids = len(state.get("ids", {}).get("values", ()))
    for name in ("tails", "loc", "scale"):
        if name not in arrays or len(arrays[name]) != n_ids:
            raise ValueError(f"{directory / ARRAYS} holds {name!r} for a different number of series than the "
                             f"{n_ids} ids of {directory / STATE}: the files do not belong together")
        values = arrays[name]
        if (values.ndim != (2 if name == "tails" else 1) or not np.issubdtype(values.dtype, np.number)
                or np.iscomplexobj(values) or not np.isfinite(values).all()):
            raise ValueError(f"{directory / ARRAYS} holds {name!r} of another shape than one row per series, or with "
                             f"values that are not finite real numbers: the file does not describe a fitted model; "
                             f"restore the files as they were saved, or fit and save the model again")
    last = state.get("last", {}).get("values", ())
    if len(last) != n_ids:
        raise ValueError(f"{directory / STATE} holds {len(last)} last timestamps for its {n_ids} ids: the file does "
                         f"not describe a fitted model; restore the files as they were saved, or fit and save the "
                         f"model again")
    width = tails.shape[1]
    if "network" in state:
        _check_scaled(directory, tails, arrays["loc"], arrays["scale"])
        try:
            size = int(estimator.resolved_input_size)
        except (TypeError, ValueError) as err:
            raise _unreadable(directory, err) from err
        if size != width:
            given = (f"input_size={estimator.input_size!r} ({size})" if estimator.input_size in (None, "auto")
                     else f"input_size={size}")
            raise _edited(directory, f"its parameters give a look-back of {given} steps, but the look-back saved in "
                                     f"{ARRAYS} holds {width}")
        return
    season = getattr(estimator, "season_length", None)
    if season is not None and season != width:
        raise _edited(directory, f"season_length={season!r}, but the season saved in {ARRAYS} holds {width} steps")


def _check_scaled(directory: Path, tails: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> None:
    """The look-back a network reads, scaled by its series' statistics, within what a float32 network computes
    with (``MAX_SCALED``, as a fit checks its data), and every spread positive."""
    from tsrsa.data.scalers import MAX_SCALED

    with np.errstate(all="ignore"):
        scaled = (tails - loc[:, None]) / scale[:, None]  # (S, T) float64
    if not ((scale > 0).all() and (np.abs(scaled) <= MAX_SCALED).all()):
        raise ValueError(f"{directory / ARRAYS} holds a look-back that its scaling statistics ('loc', 'scale') do not "
                         f"describe (a spread that is not positive, or values beyond +-{MAX_SCALED:.0e} once scaled): "
                         f"the file does not describe a fitted model; restore the files as they were saved, or fit "
                         f"and save the model again")


def _check_conformal(directory: Path, estimator, state: dict, arrays: dict) -> None:
    """The calibration arrays, when present (a model fitted with ``conformal_windows``), fit together."""
    from tsrsa.estimator.conformal import RESIDUALS_ARRAY, SCALE_ARRAY

    residuals, scale = arrays.get(RESIDUALS_ARRAY), arrays.get(SCALE_ARRAY)
    if residuals is None and scale is None:
        return
    n_ids = len(state.get("ids", {}).get("values", ()))
    if not (isinstance(residuals, np.ndarray) and isinstance(scale, np.ndarray)):
        problem = f"one of {RESIDUALS_ARRAY!r} and {SCALE_ARRAY!r} is missing"
    elif residuals.ndim != 2 or len(residuals) == 0 or residuals.shape[1] != int(estimator.h):
        problem = f"{RESIDUALS_ARRAY!r} has shape {residuals.shape}, not (windows, h={estimator.h})"
    elif scale.shape != (n_ids,):
        problem = f"{SCALE_ARRAY!r} has shape {scale.shape}, not one scale for each of the {n_ids} series"
    elif not (np.isfinite(residuals).all() and (residuals >= 0).all() and np.isfinite(scale).all()
              and (scale > 0).all()):
        problem = "it holds negative or non-finite values"
    else:
        return
    raise ValueError(f"{directory / ARRAYS} holds a conformal calibration that does not fit the model ({problem}); "
                     f"restore the files as they were saved, or fit and save the model again")


def _check_covariates(directory: Path, estimator, state: dict) -> None:
    from tsrsa.data.covariate_encoding import CovariateEncoder

    try:
        declared = estimator.declared_covariates()
    except (TypeError, ValueError) as err:
        raise _unreadable(directory, err) from err
    saved = state.get("covariates")
    if saved is None:
        if declared.active:
            raise _edited(directory, "its parameters declare covariates, but the model was fitted without them "
                                     f"({STATE} has no covariate encoding)")
        return
    try:
        encoded = CovariateEncoder.from_json(saved).spec
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"{directory / STATE} holds a covariate encoding that cannot be read ({err})") from err
    if encoded != declared:
        changed = [f"{field.name}={getattr(declared, field.name)!r}" for field in dataclasses.fields(declared)
                   if getattr(declared, field.name) != getattr(encoded, field.name)]
        fitted = {field.name: getattr(encoded, field.name) for field in dataclasses.fields(encoded)}
        raise _edited(directory, f"its parameters declare the covariates {', '.join(changed)}, but the model was "
                                 f"fitted with {fitted}")


def _check_network(directory: Path, estimator, saved: dict) -> None:
    if not isinstance(saved, dict):
        raise ValueError(f"{directory / STATE} holds no network configuration: it does not describe a fitted model")
    try:
        built = _plain(dataclasses.asdict(estimator.network_config()))
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        raise _unreadable(directory, err) from err
    skip = {"covariates", "cycle"}  # from the data: the encoding, and a learned cycle's series and period
    if saved.get("cycle") and estimator.resolved_covariates.cycle is None:
        raise _edited(directory, f"its parameters ask for no learned cycle, but the network saved in {STATE} and "
                                 f"{WEIGHTS} carries one of {saved['cycle'][1]} steps")
    if getattr(estimator, "readout_tokens", None) == "auto":
        skip.add("readout_tokens")
    for field, value in saved.items():
        if field in skip or field not in built:
            continue
        expected = built[field]
        if field == "attention_options" and isinstance(value, dict) and isinstance(expected, dict):
            value = {k: v for k, v in value.items() if k in expected and k not in _FROM_DATA_OPTIONS}
            expected = {k: expected[k] for k in value}
        if _plain(value) != expected:
            raise _edited(directory, f"its parameters build a network with {field}={expected!r}, but the network "
                                     f"saved in {STATE} and {WEIGHTS} has {field}={value!r}")
