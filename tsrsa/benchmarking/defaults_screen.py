"""Choosing the defaults on validation data across regimes.

Every results file records each run's explicit parameters; a screen compares configurations that
differ only in the model choices (:data:`CHOICES`: loss, schedule, patch length, learning rate, gate
start, scaler, statistical start, start weight, ensemble members) within each cell of a regime (a data set, horizon or
training length, and seed), on the cell's validation error, against the library's defaults run in the
same cell:

- long horizon (``ltsf.csv``): ETT and weather at the protocol's input and budget (10 full passes),
  validation MSE (``val_mse``, or the best validation loss of a run trained on MSE); a run on the most
  recent fraction of the training windows (``train_fraction``, where a full fit costs too much) is a
  cell of its own;
- many series (``m4.csv``): M4 Hourly and Weekly at the defaults' budget (10 epochs of 400
  batches), validation OWA;
- short series (``short_series.csv``): the short-series benchmark at the budget that scales with
  the data, validation MSE.

Only runs of the library's defaults in everything but the model choices and the run's own keys
(:data:`RUN_KEYS`) take part. A candidate's score in a regime is the geometric mean of its ratios
to the defaults over the cells where both ran; its overall score the geometric mean of its regime
scores, given only when it ran in all three (a choice must hold across regimes, not in the one
that was screened most).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

#: the model choices a screen compares (everything else is the protocol or a fixed setting)
CHOICES = ("loss", "lr_schedule", "patch_len", "learning_rate", "gate_init", "scaler", "start", "start_weight",
           "ensemble_size")
#: choices added after rows were made: what a row without one ran at, which is also what "auto" gives on the
#: long horizons and a large panel (one network, the network's forecast as trained)
ADDED = {"ensemble_size": 1, "start_weight": 0.0}
#: choices whose values are real numbers
REAL_CHOICES = ("learning_rate", "gate_init", "start_weight")
#: what a choice whose default is "auto" resolves to in each regime's fits: ``LONG_FITS`` on the long
#: horizons and a large panel (one network, the network's forecast as trained, RSA's gate at the layer's 0),
#: ``SHORT_FITS`` on one series at the automatic budget, as every short-series cell is (RSA's gate at
#: ``tsrsa.forecasters.rsa.SINGLE_SERIES_GATE``); a run at those values is a run of "auto"
LONG_FITS = {**ADDED, "gate_init": 0.0}
SHORT_FITS = {"gate_init": -2.0}
REGIMES = ("long horizon", "many series", "short series")
#: what a run or its protocol sets (the data's shape, the budget, the machine), never a model choice
RUN_KEYS = ("h", "input_size", "val_size", "random_state", "num_threads", "freq", "fill", "max_epochs",
            "early_stopping_patience", "batch_size", "batches_per_epoch", "inference_batch_size", "verbose",
            "accelerator", "devices", "strategy", "precision", "compile", "checkpoint_dir", "callbacks",
            "conformal_windows", "id_col", "time_col", "target_col")


def same_configuration(params: str, defaults: dict | None) -> bool:
    """Whether a row ran the defaults in everything but the model choices and the run's own keys (a
    streaming, another attention or another head's run is another configuration, not a candidate)."""
    if defaults is None:
        return True
    ran = json.loads(params)
    return all(json.dumps(ran[k], default=str) == json.dumps(v, default=str)
               for k, v in defaults.items() if k in ran and k not in CHOICES and k not in RUN_KEYS)


def choices_of(params: str) -> dict:
    """The model choices of a row's parameters (JSON); a choice of :data:`ADDED` absent is what a row made
    before it existed ran at (``ensemble_size`` 1: one network; ``start_weight`` 0). A real-valued choice
    (:data:`REAL_CHOICES`) written as a whole number (``gate_init=-2`` on a command line) is the same number
    as a float (-2.0 in a configuration file)."""
    values = json.loads(params)
    out = {**{key: values.get(key) for key in CHOICES}, **{k: values.get(k, v) for k, v in ADDED.items()}}
    for key in REAL_CHOICES:
        if isinstance(out[key], int) and not isinstance(out[key], bool):
            out[key] = float(out[key])
    return out


def spelt_auto(values: dict, defaults: dict, gives: dict) -> dict:
    """A row's parameters (``values``) with each one whose default is "auto" and whose value is what "auto"
    gives in the row's fits (``gives``: :data:`LONG_FITS` or :data:`SHORT_FITS`) spelt "auto"."""
    return {k: "auto" if defaults.get(k) == "auto" and k in gives and gives[k] == v else v for k, v in values.items()}


def _auto_twins(choice: dict, defaults: dict, gives: dict) -> list[str]:
    """Where "auto" gives ``gives`` (:data:`LONG_FITS` or :data:`SHORT_FITS`): a run of the defaults' other
    choices (``choice``) under every spelling of those, "auto" or the value (else none)."""
    keys = [k for k in gives if defaults.get(k) == "auto"]
    others = [k for k in CHOICES if k not in keys]
    if not keys or any(choice[k] not in (gives[k], "auto") for k in keys) \
            or json.dumps({k: choice[k] for k in others}, default=str) != json.dumps(
                {k: defaults.get(k) for k in others}, default=str):
        return []
    spellings = [{}]
    for key in keys:
        spellings = [{**s, key: value} for s in spellings for value in (gives[key], "auto")]
    return sorted({json.dumps({**choice, **s}, sort_keys=True, default=str) for s in spellings})


def label(choice: dict, reference: dict) -> str:
    """A candidate named by the choices it changes (``default`` when none)."""
    changed = [f"{k}={choice[k]}" for k in CHOICES if choice[k] != reference[k]]
    return ",".join(changed) or "default"


def _cells(rows: pd.DataFrame, cell: list[str], metric: pd.Series, defaults: dict | None,
           gives: dict) -> pd.DataFrame:
    """The latest metric per cell and choice. Where "auto" gives fixed values in these cells (``gives``:
    :data:`LONG_FITS` or :data:`SHORT_FITS`), a run at those values or at "auto" counts for every spelling."""
    kept = rows["params"].map(lambda p: same_configuration(p, defaults))
    rows, metric = rows[kept], metric[kept]
    choices = rows["params"].map(choices_of)
    out = rows.assign(metric=metric.astype(float), choice=choices.map(lambda c: json.dumps(c, sort_keys=True)))
    if defaults is not None:
        twins = [(i, twin) for i, c in enumerate(choices) for twin in _auto_twins(c, defaults, gives)]
        if twins:
            positions, spelt = zip(*twins)
            out = pd.concat([out, out.iloc[list(positions)].assign(choice=list(spelt))])
    out = out[np.isfinite(out["metric"])]
    return out.sort_values("date").groupby([*cell, "choice"], as_index=False).last()[[*cell, "choice", "metric"]]


def long_horizon_cells(ltsf: pd.DataFrame, model: str, defaults: dict | None = None) -> pd.DataFrame:
    """Cells of the long-horizon file: one model at the protocol input and budget, a training fraction
    its own cell."""
    rows = ltsf[(ltsf["model"] == model) & (ltsf["input_size"] == 96)]
    rows = rows[rows["params"].notna()]
    rows = rows[rows["params"].map(lambda p: json.loads(p).get("max_epochs") == 10)]
    trained_on_mse = rows["params"].map(lambda p: json.loads(p).get("loss") == "mse")
    val_mse = rows["val_mse"] if "val_mse" in rows else pd.Series(np.nan, index=rows.index)
    metric = val_mse.where(val_mse.notna(), rows["val_loss"].where(trained_on_mse))
    return _cells(rows.assign(date=rows.index), ["dataset", "horizon", "train_fraction", "seed"], metric, defaults,
                  LONG_FITS)


def many_series_cells(m4: pd.DataFrame, model: str, defaults: dict | None = None) -> pd.DataFrame:
    """Cells of the M4 file: one model's validation rows at the defaults' budget for a large panel
    (``max_epochs="auto"`` with ``batches_per_epoch="auto"``, or the same spelled out: 10 epochs of
    ``EPOCH_STEPS`` batches; a pass over either panel is longer)."""
    from tsrsa.training.budget import AUTO, EPOCH_STEPS, MIN_EPOCHS

    rows = m4[(m4["model"] == model) & (m4["split"] == "validation")]

    def at_budget(params: str) -> bool:
        p = json.loads(params)
        epochs, batches = p.get("max_epochs"), p.get("batches_per_epoch")
        return (epochs, batches) == (AUTO, AUTO) or (batches == EPOCH_STEPS and epochs in (MIN_EPOCHS, AUTO))

    rows = rows[rows["params"].map(at_budget)]
    return _cells(rows, ["frequency", "seed"], rows["owa"], defaults, LONG_FITS)


def short_series_cells(short: pd.DataFrame, model: str, defaults: dict | None = None) -> pd.DataFrame:
    """Cells of the short-series file: one model at the budget that scales with the data."""
    rows = short[(short["model"] == model)]
    rows = rows[rows["params"].map(lambda p: json.loads(p).get("max_epochs") == "auto")]
    return _cells(rows, ["dataset", "train_length", "seed"], rows["val_mse"], defaults, SHORT_FITS)


def regime_scores(cells: pd.DataFrame, reference: dict) -> pd.DataFrame:
    """Per candidate: cells where it and the defaults ran, and the geometric mean of its ratios."""
    key = [c for c in cells.columns if c not in ("choice", "metric")]
    base = json.dumps(reference, sort_keys=True)
    ref = cells[cells["choice"] == base].set_index(key)["metric"]
    rows = []
    for choice, group in cells.groupby("choice"):
        paired = group.set_index(key)["metric"].to_frame("metric").join(ref.rename("reference"), how="inner")
        paired = paired[(paired["metric"] > 0) & (paired["reference"] > 0)]
        if len(paired):
            ratio = math.exp(float(np.log(paired["metric"] / paired["reference"]).mean()))
            rows.append({"candidate": label(json.loads(choice), reference), "cells": len(paired), "ratio": ratio})
    return pd.DataFrame(rows, columns=["candidate", "cells", "ratio"])


def screen(cells: dict[str, pd.DataFrame], reference: dict) -> pd.DataFrame:
    """One row per candidate: each regime's cells and ratio, and the overall geometric mean."""
    table = None
    for regime, regime_cells in cells.items():
        scores = regime_scores(regime_cells, reference).rename(
            columns={"cells": f"{regime} cells", "ratio": f"{regime} ratio"})
        table = scores if table is None else table.merge(scores, on="candidate", how="outer")
    ratios = table[[f"{r} ratio" for r in cells]].astype(float)
    table["overall"] = np.exp(np.log(ratios).mean(axis=1, skipna=False))
    return table.sort_values(["overall", "candidate"], na_position="last").reset_index(drop=True)


def render(table: pd.DataFrame, regimes) -> str:
    """The screen as a markdown table (ratios below 1: better than the defaults on validation)."""
    head = "| candidate | " + " | ".join(f"{r} (cells)" for r in regimes) + " | overall |"
    lines = [head, "|---|" + "---|" * (len(regimes) + 1)]
    for _, row in table.iterrows():
        cells = []
        for r in regimes:
            n = row[f"{r} cells"]
            cells.append("" if pd.isna(n) else f"{row[f'{r} ratio']:.3f} ({int(n)})")
        overall = "" if pd.isna(row["overall"]) else f"{row['overall']:.3f}"
        lines.append(f"| {row['candidate']} | " + " | ".join(cells) + f" | {overall} |")
    return "\n".join(lines) + "\n"
