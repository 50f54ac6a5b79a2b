"""The models the command line names: their short names, and the members of a model set (``--model Auto``,
``--model Multi`` with ``-p models=...``). The standard library only at import; the forecasters load when a
command runs."""
from __future__ import annotations

import argparse
import json

from tsrsa.cli.files import CommandError

#: short model names of the command line -> forecaster class names
MODELS = {
    "RSA": "RSAForecaster",
    "Transformer": "TransformerForecaster",
    "LSTM": "LSTMForecaster",
    "DLinear": "DLinearForecaster",
    "SeasonalNaive": "SeasonalNaiveForecaster",
    "ETS": "ETSForecaster",
    "ARIMA": "ARIMAForecaster",
    "Theta": "ThetaForecaster",
    "Auto": "AutoForecaster",
    "Multi": "MultiForecaster",
}

#: what the command gives each member of a model set (Auto, Multi) that takes it: its flags, and the season
MEMBER_PARAMS = ("h", "id_col", "time_col", "target_col", "freq", "fill", "input_size", "max_epochs", "random_state",
                  "season_length")


def model_class_name(text: str) -> str:
    """"RSA", "rsa" or "RSAForecaster" -> "RSAForecaster"."""
    wanted = text.lower().removesuffix("forecaster")
    for short, cls in MODELS.items():
        if wanted == short.lower():
            return cls
    raise argparse.ArgumentTypeError(f"unknown model {text!r}; choose from {', '.join(MODELS)}")


def model_set_params(cls, params: dict) -> dict:
    """A model set's parameters (AutoForecaster, MultiForecaster): ``-p models=...`` given as names of
    ``--model`` (a list, or a dict name -> model name) becomes the forecasters, each built with the parameters
    of :data:`MEMBER_PARAMS` it takes; those the set does not take itself go to its members only. Without
    ``-p models``: the set's own default models (AutoForecaster's candidates), or a CommandError saying how
    to name them."""
    given = params.get("models")
    if given is None:
        if "models" not in cls.param_defaults():
            short = next(k for k, v in MODELS.items() if v == cls.__name__)
            raise CommandError(f"--model {short} fits the models you name: add -p 'models=[\"ETS\",\"Theta\"]' "
                               f"(names as --model takes them: {', '.join(MODELS)}), or a dict name -> model")
        return params
    own = set(cls.param_names())
    shared = {k: params[k] for k in MEMBER_PARAMS if k in params}
    out = {k: v for k, v in params.items() if k in own or k not in MEMBER_PARAMS}
    out["models"] = members(given, shared)
    return out


def members(given, shared: dict):
    """The forecasters ``-p models=`` names (a name, a list of names, or a dict name -> model name)."""
    from tsrsa.forecasters import FORECASTERS

    if isinstance(given, str):
        given = [given]
    if isinstance(given, list):
        pairs = [(None, item) for item in given]
    elif isinstance(given, dict):
        pairs = list(given.items())
    else:
        raise CommandError(f"-p models={json.dumps(given)} is neither a list of model names nor a dict name -> "
                           f"model name; e.g. -p 'models=[\"ETS\",\"Theta\"]'")
    classes = {c.__name__: c for c in FORECASTERS}
    out = []
    for name, text in pairs:
        if not isinstance(text, str):
            raise CommandError(f"-p models: {json.dumps(text)} is not a model name; use the names of --model "
                               f"({', '.join(MODELS)})")
        try:
            member = classes.get(model_class_name(text))
        except argparse.ArgumentTypeError as err:
            raise CommandError(f"-p models: {err}") from None
        if member is None:
            raise CommandError(f"-p models: {text!r} is itself a set of models; name single forecasters")
        taken = set(member.param_names())
        model = member(**{k: v for k, v in shared.items() if k in taken})
        out.append(model if name is None else (name, model))
    return out


def series_count(model) -> int:
    """The series a fitted forecaster or model set forecasts."""
    if hasattr(model, "ids_"):
        return len(model.ids_)
    if hasattr(model, "models_"):  # MultiForecaster: every model has the same series
        return series_count(next(iter(model.models_.values())))
    return len(model.memory_.ids)
