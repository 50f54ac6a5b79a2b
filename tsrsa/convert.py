"""Turn a trained softmax forecaster into a recurrent one: swap, then finetune (T2R, Kasai et al. 2021).

``to_recurrent(model, df)`` takes a fitted ``TransformerForecaster`` (softmax attention) or
``RSAForecaster`` (whose REM heads mix with a softmax branch), replaces every softmax attention
by the ``t2r`` kind (learned relu features, ``tsrsa.nn.t2r``; their weights start fresh), copies
every other weight, and finetunes all of them on ``df`` with the original's objective. The result
is a new fitted forecaster; the original is left as it was.

An original in the streaming configuration (``stream=True``: causal, no learned positions,
latest-state readout) converts into a model that streams with a state of fixed size per layer:
``update()`` costs the same at any history length. Any other original converts into a model of
the same kind of forecast (fixed windows, parallel form) and the conversion says so with a
warning: its attention is linear in the tokens, but it cannot stream.

A streaming original's ALiBi distance bias carries over as a decay of the T2R state by
exp(−slope) per token and head (``tsrsa.nn.t2r``), so the converted model keeps its relative
positions; a bounded cache is dropped (T2R's state has a fixed size anyway).
"""
from __future__ import annotations

import dataclasses
import warnings

from tsrsa.forecasters.rem_options import REM
from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.transformer import TransformerForecaster
from tsrsa.nn.t2r import DEFAULT_FEATURE_SIZE, check_feature_size

__all__ = ["to_recurrent"]

#: the state-dict keys a conversion adds (the feature maps); every other key is copied
_NEW_KEYS = (".feature_map.", ".features.")


def _check_convertible(model) -> None:
    if not isinstance(model, TransformerForecaster):
        raise TypeError(
            f"to_recurrent converts the softmax attention of a TransformerForecaster or RSAForecaster; "
            f"{type(model).__name__} has no attention to convert"
        )
    model.check_is_fitted()
    if model.ensemble_size_ > 1:
        raise ValueError(f"to_recurrent converts one network, and this model averages {model.ensemble_size_} "
                         f"(ensemble_size={model.ensemble_size!r}): convert a model fitted with ensemble_size=1")
    kind = model.network_.config.attention
    if kind == "rsa":
        features = model.resolved_attention_options()["t2r_features"]
        if features is not None:
            raise ValueError(f"this RSAForecaster is already converted "
                             f"(attention_options={{'t2r_features': {features}}}); "
                             f"its REM heads mix with T2R features, not softmax")
    elif kind != "softmax":
        raise ValueError(
            f"attention={kind!r} has no softmax attention to convert; to_recurrent converts "
            f"attention='softmax' (TransformerForecaster) and RSAForecaster"
        )


def _unit_dilations(model) -> list[int] | None:
    """The dilation of each dilated REM head or pair the original was built with (None without any)."""
    plan = model.network_.blocks[0].attn.plan
    rem = model.resolved_rem
    start = int(rem.n_regular) + 2 * int(rem.n_cyclic)
    per_head = list(plan.dilations[start:])
    n_regular = int(rem.n_dilated_regular)
    units = per_head[:n_regular] + per_head[n_regular::2]  # a cyclic pair counts once
    return units or None


def _converted_params(model, feature_size: int, finetune_epochs, params: dict) -> dict:
    new = model.get_params(deep=False)
    if isinstance(model, RSAForecaster):
        rem, options = new.get("rem"), new.get("attention_options")
        rem = (dataclasses.replace(rem, dilations=_unit_dilations(model)) if isinstance(rem, REM)
               else {**(rem or {}), "dilations": _unit_dilations(model)})
        new.update(rem=rem, attention_options={**(options or {}), "t2r_features": feature_size, "cache_size": None})
    else:
        options = {"feature_size": feature_size}
        built = model.network_.config.attention_options  # with the streaming configuration's ALiBi, when it applied
        if "alibi" in built:
            options["alibi"] = bool(built["alibi"])  # explicit: the converted model keeps the original's positions
        new.update(attention="t2r", attention_options=options)
    if finetune_epochs is not None:
        new["max_epochs"] = finetune_epochs
    if new.get("readout_tokens") == "auto":  # the reach the original resolved, whatever df's number of windows
        new["readout_tokens"] = model.network_.config.readout_tokens
    # an option named on its own (batches_per_epoch=2, deprecated) or by its nested name (trainer__num_threads=1)
    # changes that option of the original's group
    params = type(model).upgrade_params(params, owner="to_recurrent", current=new, nested=True, stacklevel=3)
    unknown = sorted(set(params) - set(new))
    if unknown:
        raise TypeError(f"to_recurrent got parameter(s) {unknown} that {type(model).__name__} does not take")
    fixed = sorted(set(params) & {"attention", "attention_options", "t2r_features", "stream", "causal", "input_size",
                                  "h", "patch_len", "d_model", "n_heads", "n_layers", "d_ff", "readout_tokens"})
    if fixed:
        raise ValueError(f"to_recurrent keeps the original's architecture; {fixed} cannot change (use "
                         f"feature_size for the T2R features)")
    new.update(params)
    return new


def to_recurrent(model, df, *, feature_size: int = DEFAULT_FEATURE_SIZE, finetune_epochs=None, **params):
    """A new forecaster with every softmax attention of ``model`` replaced by T2R's, finetuned on ``df``.

    Parameters
    ----------
    model : TransformerForecaster or RSAForecaster
        Fitted, with softmax attention (``attention="softmax"``; RSA's softmax branch). Left
        unchanged.
    df : DataFrame
        The frame to finetune on, as ``fit`` takes it (usually the original's training frame).
    feature_size : int, default 32
        T2R features per head (k).
    finetune_epochs : int or "auto", optional
        ``max_epochs`` of the finetuning; None keeps the original's.
    **params
        Other constructor arguments to change for the finetuning (``learning_rate``,
        ``val_size``, ``random_state``, ...), an option of a group by its nested name
        (``trainer__num_threads=1``); the architecture stays the original's.

    Returns
    -------
    The converted forecaster (the original's class), fitted: ``fit_history_`` is the finetuning's.
    ``clone()`` of it is the same T2R architecture untrained, for training from scratch.

    Warns
    -----
    UserWarning
        When ``model`` is not in the streaming configuration: the converted model cannot stream.
    """
    _check_convertible(model)
    check_feature_size(feature_size)
    converted = type(model)(**_converted_params(model, feature_size, finetune_epochs, params))
    donor = {k: v.detach().clone() for k, v in model.network_.state_dict().items()}
    converted.fit_from(df, donor, new=_NEW_KEYS)
    if not model.state_type().streams:
        warnings.warn(
            f"the original {type(model).__name__} is not in the streaming configuration (stream=False), so the "
            f"converted model forecasts from fixed windows with linear attention and cannot stream; convert a "
            f"model fitted with stream=True for O(1) updates", UserWarning, stacklevel=2)
    return converted
