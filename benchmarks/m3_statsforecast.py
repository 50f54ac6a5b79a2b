"""The statsforecast side of m3_statistical.py: its AutoETS, AutoARIMA and Theta as the references of ours.

statsforecast runs in its own environment (``--sf-python`` of m3_statistical.py; its requirements in
``requirements-statsforecast.txt``: statsforecast 2.1 needs pandas < 3, which tsrsa does not use). :func:`run_sf`
writes the training parts to a temporary folder and runs this file there as ``SF_PYTHON
benchmarks/m3_statsforecast.py --sf-worker FOLDER``; the worker imports numpy, pandas and statsforecast only
(never tsrsa), fits the model on each series in turn (one process) and writes its forecasts.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

#: m3_statistical.py's model name -> statsforecast's class, each at its defaults with the season
SF_MODELS = {"sf-AutoETS": "AutoETS", "sf-AutoARIMA": "AutoARIMA", "sf-Theta": "Theta"}


def run_sf(model: str, train: pd.DataFrame, h: int, m: int, sf_python: str) -> tuple[pd.DataFrame, float, dict]:
    """(forecast frame with unique_id, ds and yhat; the worker's seconds fitting and forecasting every series;
    the parameters: engine, versions and the model's arguments) of ``model`` (a key of :data:`SF_MODELS`) on
    the long frame ``train`` (integer ``ds`` per series)."""
    if model not in SF_MODELS:
        raise ValueError(f"unknown statsforecast model {model!r}; choose among {sorted(SF_MODELS)}")
    if not sf_python:
        raise ValueError(f"{model} runs statsforecast in its own environment: pass --sf-python PATH (see "
                         "benchmarks/requirements-statsforecast.txt)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        train.to_csv(tmp / "train.csv", index=False)
        (tmp / "job.json").write_text(json.dumps({"model": SF_MODELS[model], "h": h, "season_length": m}))
        subprocess.run([sf_python, str(Path(__file__).resolve()), "--sf-worker", str(tmp)], check=True)
        out = json.loads((tmp / "out.json").read_text())
        forecast = pd.read_csv(tmp / "forecast.csv", dtype={"unique_id": str})
    params = {"engine": f"statsforecast {out['statsforecast']}", "pandas": out["pandas"],
              "model": f"{SF_MODELS[model]}(season_length={m})"}
    return forecast, float(out["seconds"]), params


def worker(folder: Path) -> None:
    """Fit the job's statsforecast model on each series of ``folder/train.csv`` and forecast ``h`` steps."""
    import numpy as np
    import statsforecast
    from statsforecast import models

    job = json.loads((folder / "job.json").read_text())
    train = pd.read_csv(folder / "train.csv", dtype={"unique_id": str})
    cls, h = getattr(models, job["model"]), int(job["h"])
    rows, seconds = [], 0.0
    for uid, part in train.groupby("unique_id", sort=False):
        y = part["y"].to_numpy(dtype=np.float64)
        began = time.perf_counter()
        try:
            yhat = cls(season_length=int(job["season_length"])).forecast(y=y, h=h)["mean"]
        except Exception:  # noqa: BLE001 - a series the engine refuses is scored as failed (NaN), as ours are
            yhat = np.full(h, np.nan)
        seconds += time.perf_counter() - began
        last = int(part["ds"].iloc[-1])
        rows.append(pd.DataFrame({"unique_id": uid, "ds": last + 1 + np.arange(h), "yhat": yhat}))
    pd.concat(rows, ignore_index=True).to_csv(folder / "forecast.csv", index=False)
    (folder / "out.json").write_text(json.dumps({"seconds": seconds, "statsforecast": statsforecast.__version__,
                                                 "pandas": pd.__version__}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--sf-worker":
        worker(Path(sys.argv[2]))
    else:
        sys.exit("usage: m3_statsforecast.py --sf-worker FOLDER (run by m3_statistical.py --sf-python)")
