"""One global tsrsa model over every series of an M4 frequency, fitted once, used for both splits.

The protocol: the model is fitted on the validation histories (each training series without its
last h values), with early stopping on their last h steps (``val_size=h``, the best epoch kept) and
the library's defaults otherwise, its training budget included (``max_epochs="auto"``: on these
panels 10 epochs of 400 batches, patience 3; rows made before 2026-11-27 ran 10 whole passes,
which their parameters record); input 168 (Hourly: 7 days) or
52 (Weekly: a year). That one model forecasts the validation target from the validation
histories and the test from the full training series (``predict(df=full train)``: the last h
training values reach it as inputs, not as training data), so one fit gives both rows. Series
shorter than input + h + val_size are left out of training and forecast by the same model from
their last input values (``predict(df=...)`` takes series the model has not seen).
"""
from __future__ import annotations

import json
import time

import numpy as np

from tsrsa.benchmarking.compat import grouped_kwargs
from tsrsa.benchmarking.m4 import M4Split
from tsrsa.benchmarking.runner import best_epoch

#: the benchmark's names of tsrsa's neural forecasters
NEURAL = {"RSA": "RSAForecaster", "Transformer": "TransformerForecaster", "LSTM": "LSTMForecaster",
          "DLinear": "DLinearForecaster"}
#: the protocol's settings of every neural model beyond the run's own (none: the library's defaults)
PROTOCOL: dict = {}
#: the options every neural run sets itself (never an earlier default)
RUN_KEYS = {"h", "input_size", "freq", "val_size", "random_state", "num_threads", *PROTOCOL}


def forecaster_class(name: str):
    """The tsrsa forecaster class of a benchmark name ("RSA" -> ``RSAForecaster``)."""
    from tsrsa.forecasters import FORECASTERS

    return {cls.__name__: cls for cls in FORECASTERS}[NEURAL[name]]


def forecast_matrix(frame, ids, h: int, column: str = "yhat") -> np.ndarray:
    """A long forecast frame -> (S, h) in the order of ``ids`` (the first h steps of each series)."""
    wide = frame.sort_values(["unique_id", "ds"]).groupby("unique_id", sort=False)[column].apply(list)
    return np.array([wide[sid][:h] for sid in ids], dtype=np.float64)


def naive_units(split: M4Split) -> tuple[np.ndarray, np.ndarray]:
    """Per series: the history's mean and its in-sample lag-m naive MAE (MASE's denominator).

    Returns
    -------
    loc, scale : numpy.ndarray
        (S,) each, in the order of ``split.ids``; a scale of 0 is replaced by 1.
    """
    m = split.frequency.m
    loc = np.array([split.history[s].mean() for s in split.ids])
    scale = np.array([np.mean(np.abs(split.history[s][m:] - split.history[s][:-m])) for s in split.ids])
    return loc, np.where(scale > 0, scale, 1.0)


def run_global_model(val: M4Split, test: M4Split | None, name: str, seed: int, overrides: dict,
                     num_threads: int, naive_scaling: bool = False) -> tuple:
    """Fit one global model on the validation histories and forecast both splits.

    Parameters
    ----------
    val : M4Split
        The validation split: the model fits its histories.
    test : M4Split, optional
        The test split; forecast from its histories by the same model when given.
    name : str
        A key of :data:`NEURAL`.
    seed : int
        ``random_state``.
    overrides : dict
        Constructor arguments over the protocol's.
    num_threads : int
    naive_scaling : bool
        Each series enters as (y - mean) / naive MAE of its validation history, with
        ``scaler="identity"`` unless set, so that the training loss is in MASE's units.

    Returns
    -------
    params : dict
        ``get_params()`` of the model (and how the series were scaled).
    fit_seconds : float
    extra : dict
        ``epochs``, ``best_epoch``, ``series_trained`` and the validation curve ``history`` (JSON
        of [train loss, validation loss] per epoch).
    forecasts : dict
        ``{split name: (forecasts (S, h), predict seconds)}`` for "validation" and, with
        ``test``, "test".
    """
    f = val.frequency
    cls = forecaster_class(name)
    params = {"h": f.h, "input_size": f.input_size, "freq": 1, "val_size": f.h, "random_state": seed,
              "num_threads": num_threads, **PROTOCOL, **({"scaler": "identity"} if naive_scaling else {}),
              **overrides}
    model = cls(**grouped_kwargs(cls, params))  # num_threads (and any trainer option of overrides) in trainer
    loc, scale = naive_units(val) if naive_scaling else (np.zeros(len(val.ids)), np.ones(len(val.ids)))

    def frame(split):
        out = split.frame()
        position = out["unique_id"].map({s: i for i, s in enumerate(split.ids)}).to_numpy()
        out["y"] = (out["y"].to_numpy() - loc[position]) / scale[position]
        return out

    need = model.input_size + model.h + model.val_size
    trained = [s for s in val.ids if len(val.history[s]) >= need]
    history_frame = frame(val)
    began = time.perf_counter()
    model.fit(history_frame[history_frame["unique_id"].isin(set(trained))])
    fit_seconds = time.perf_counter() - began
    forecasts = {}
    for split_name, split in (("validation", val), ("test", test)):
        if split is not None:
            began = time.perf_counter()
            fc = forecast_matrix(model.predict(df=frame(split)), split.ids, f.h) * scale[:, None] + loc[:, None]
            forecasts[split_name] = (fc, time.perf_counter() - began)
    history = model.fit_history_
    losses = history["val_loss"].to_numpy(dtype=float)
    extra = {"epochs": len(history), "best_epoch": best_epoch(model),
             "series_trained": len(trained),
             "history": json.dumps([[round(a, 5), round(b, 5)] for a, b in zip(history["train_loss"], losses)])}
    params = model.get_params()
    if "trainer" in params:  # tsrsa 0.15 on: the trainer's options one by one, as earlier rows name them
        from tsrsa.estimator.trainer import flat_params

        params = flat_params(params, type(model))
    if naive_scaling:
        params["benchmark_scaling"] = "(y - mean) / in-sample lag-m naive MAE of the validation history, per series"
    return params, fit_seconds, extra, forecasts


#: the benchmark's names of tsrsa's sets of models
MODEL_SETS = {"Auto": "AutoForecaster"}


def run_model_set(val: M4Split, test: M4Split | None, name: str, seed: int, overrides: dict,
                  num_threads: int) -> tuple:
    """:func:`run_global_model` for ``AutoForecaster`` at its defaults (its candidates at theirs, their
    look-backs and validation their own, the season the frequency's): fitted once on the validation
    histories, every series included (a candidate too short for a series is skipped there), it forecasts
    the validation target and, from the full training series, the test (``predict(df=...)``). ``extra``
    holds how many series kept each candidate (``history``: JSON of ``{kept: series}``)."""
    from tsrsa.forecasters import MODEL_SETS as CLASSES

    f = val.frequency
    cls = {c.__name__: c for c in CLASSES}[MODEL_SETS[name]]
    model = cls(h=f.h, season_length=f.m, freq=1, random_state=seed, **overrides)  # candidates: one thread each
    began = time.perf_counter()
    model.fit(val.frame())
    fit_seconds = time.perf_counter() - began
    forecasts = {}
    for split_name, split in (("validation", val), ("test", test)):
        if split is not None:
            began = time.perf_counter()
            frame = model.predict() if split is val else model.predict(df=split.frame())
            forecasts[split_name] = (forecast_matrix(frame, split.ids, f.h), time.perf_counter() - began)
    kept = model.choice_["kept"].value_counts().to_dict()
    extra = {"epochs": None, "best_epoch": None, "series_trained": len(val.ids), "history": json.dumps(kept)}
    params = {**model.get_params(), "models": list(model.models_)}  # the candidates some series kept
    return params, fit_seconds, extra, forecasts
