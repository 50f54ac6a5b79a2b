"""One benchmark run: fit a configured forecaster on the protocol's rows, score the test windows."""
from __future__ import annotations

import json
import time

import numpy as np

from tsrsa.benchmarking.compat import accepted_names, grouped_kwargs
from tsrsa.benchmarking.configs import ModelConfig
from tsrsa.benchmarking.protocol import ProtocolData, fit_frame, training_start, validation_size
from tsrsa.benchmarking.results import COLUMNS, explicit_params
from tsrsa.benchmarking.scoring import score_model


def build_estimator(config: ModelConfig, data: ProtocolData, h: int, *, seed: int, variant: str = "default",
                    overrides: dict | None = None, val_size: int = 0, num_threads: int | None = None,
                    accelerator: str = "cpu"):
    """The configured estimator with the protocol's settings (only those it accepts). The run's threads,
    accelerator and silence are a neural model's trainer options, named one by one as results rows record
    them (:func:`tsrsa.estimator.trainer.flat_params`) and passed in its ``trainer``, as every option of a
    group is passed in its group (:func:`tsrsa.benchmarking.compat.grouped_kwargs`)."""
    cls = config.estimator_class()
    params = config.params_for(data.name, variant)
    params.update(overrides or {})
    accepted = accepted_params(cls)
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ValueError(f"{config.path}: {cls.__name__} has no parameters {unknown}")
    harness = {"input_size": data.input_size, "val_size": val_size, "random_state": int(seed),
               "num_threads": num_threads, "accelerator": accelerator, "verbose": 0}
    if params.get("input_size") == "auto":  # a variant that chooses its look-back on the validation windows
        del harness["input_size"]
    params.update({k: v for k, v in harness.items() if k in accepted})
    return cls(h=int(h), **grouped_kwargs(cls, params))


def accepted_params(cls) -> set[str]:
    """The parameters the harness may give ``cls``: its constructor's, and the options of its groups by their
    own names (a trainer's ``num_threads``, the REM's ``n_cyclic``:
    :func:`~tsrsa.benchmarking.compat.accepted_names`)."""
    return set(cls.param_names()) | accepted_names(cls)


def device_label(model) -> str:
    """Where a fitted model ran: "cpu (1 thread)" or "cuda (NVIDIA H100 ...)"."""
    network = getattr(model, "network_", None)
    if network is None:
        return "cpu"
    import torch

    device = next(network.parameters()).device
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        threads = model.resolved_trainer.num_threads or torch.get_num_threads()
        return f"cpu ({threads} thread{'s' if threads != 1 else ''})"
    return device.type


def best_val_loss(model) -> float | None:
    """The lowest validation loss of a neural model's epochs (the kept epoch's, unless the fit kept its
    statistical start: ``best_epoch_`` 0); None without validation or training."""
    history = getattr(model, "fit_history_", None)
    if history is None or len(history) == 0 or history["val_loss"].isna().all():
        return None
    if "member" in history:  # an ensemble: the mean of its members' lowest losses
        return float(history.groupby("member")["val_loss"].min().mean())
    return float(history["val_loss"].min())


def best_epoch(model) -> float | None:
    """The epoch whose weights a neural model kept: as the fit recorded it (``best_epoch_``; 0 for the
    starting weights of a statistical start; of an ensemble, the mean of its members'), else that of
    the lowest validation loss, or the last one when it trained without validation; None for models
    that do not train."""
    kept = getattr(model, "best_epoch_", None)
    if isinstance(kept, list):
        return float(np.mean(kept))
    if kept is not None:
        return int(kept)
    history = getattr(model, "fit_history_", None)
    if history is None or len(history) == 0:
        return None
    val = history["val_loss"].to_numpy(dtype=float)
    if np.isnan(val).all():
        return int(history["epoch"].iloc[-1])
    return int(history["epoch"].iloc[int(np.nanargmin(val))])


def run_one(config: ModelConfig, data: ProtocolData, h: int, *, seed: int = 0, variant: str = "default",
            overrides: dict | None = None, train_fraction: float = 1.0, max_windows: int | None = None,
            num_threads: int | None = None, accelerator: str = "cpu") -> dict:
    """Fit and score one (model, data set, horizon, seed); returns the row of ``ltsf.csv``.

    The model fits rows [start, val_end) of every channel, the last ``val_size`` of them held out
    for validation (its training windows lie wholly in the training rows; its validation
    windows have their targets in the validation rows). ``start`` is 0, or the first row of the
    most recent ``train_fraction`` of the training windows. A model without ``val_size`` fits
    the training rows only.
    """
    b = data.borders
    start = training_start(data, h, train_fraction, max_windows)
    probe = accepted_params(config.estimator_class())
    overrides = {k: v for k, v in (overrides or {}).items() if k in probe}  # e.g. no max_epochs for naive
    v = validation_size(data, h, max_windows) if "val_size" in probe else 0
    model = build_estimator(config, data, h, seed=seed, variant=variant, overrides=overrides, val_size=v,
                            num_threads=num_threads, accelerator=accelerator)
    frame = fit_frame(data, start, b.train_end + v)
    began = time.perf_counter()
    model.fit(frame)
    seconds = time.perf_counter() - began
    score = score_model(model, data, h, max_windows=max_windows)
    row = {
        "dataset": data.name, "horizon": int(h), "model": type(model).__name__,
        "variant": config.variant_label(variant, overrides), "seed": int(seed), "mse": score.mse, "mae": score.mae,
        "input_size": data.input_size, "train_fraction": float(train_fraction), "device": device_label(model),
        "train_seconds": round(seconds, 2), "best_epoch": best_epoch(model), "val_loss": best_val_loss(model),
        "params": explicit_params(model), "val_mse": None, "val_mae": None,
    }
    if model.get_params().get("input_size") == "auto":  # the look-back the fit chose, beside what was asked
        row["params"] = json.dumps({**json.loads(row["params"]), "input_size_chosen": int(model.input_size_)},
                                   sort_keys=True)
    if v and max_windows is None and hasattr(model, "forecast_windows"):  # choices are made on these
        val = score_model(model, data, h, part="val")
        row.update(val_mse=val.mse, val_mae=val.mae)
    assert list(row) == list(COLUMNS)
    return row
