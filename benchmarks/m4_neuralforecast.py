"""The neuralforecast side of m4.py: NHITS and NBEATS fitted and used as tsrsa's global models.

neuralforecast runs in its own environment (``--nf-python`` of m4.py; its requirements in
``requirements-neuralforecast.txt``). :func:`run_nf` writes the frames to a temporary folder and
runs this file there as ``NF_PYTHON benchmarks/m4_neuralforecast.py --nf-worker FOLDER``; the
worker imports numpy, pandas, torch and neuralforecast only (never tsrsa).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

NF_MODELS = ("NHITS", "NBEATS")
#: neuralforecast as a practitioner sets it up for a panel of differently scaled series
NF_SETTINGS = {"scaler_type": "robust", "max_steps": 1000, "val_check_steps": 50, "early_stop_patience_steps": 5}


def run_nf(val, test, name: str, seed: int, overrides: dict, nf_python: str, num_threads: int,
           intervals: dict | None = None) -> tuple:
    """NHITS or NBEATS in neuralforecast's own environment, fitted and used as
    ``tsrsa.benchmarking.m4_global.run_global_model`` fits and uses ours; the same return value.

    ``intervals`` (``{"level": [80, 95], "n_windows": k, "step_size": s}``): the fit also calibrates
    neuralforecast's conformal intervals (``PredictionIntervals(n_windows=k, step_size=s)``) and each
    forecast asks for those levels; each value of ``forecasts`` then holds a third item, the bounds
    ``{"NHITS-lo-80": (S, h), "NHITS-hi-80": ..., ...}``, and ``params`` the settings.
    """
    from tsrsa.benchmarking.m4_global import forecast_matrix

    f = val.frequency
    params = {"h": f.h, "input_size": f.input_size, "random_seed": seed, **NF_SETTINGS, **overrides}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        val.frame().to_csv(tmp / "validation.csv", index=False)
        if test is not None:
            test.frame().to_csv(tmp / "test.csv", index=False)
        (tmp / "job.json").write_text(json.dumps({"model": name, "params": params, "val_size": f.h,
                                                  "num_threads": num_threads,
                                                  **({"intervals": intervals} if intervals else {})}))
        subprocess.run([nf_python, str(Path(__file__).resolve()), "--nf-worker", str(tmp)], check=True)
        out = json.loads((tmp / "out.json").read_text())
        forecasts = {}
        for split_name, split in (("validation", val), ("test", test)):
            if split is not None:
                frame = pd.read_csv(tmp / f"forecast_{split_name}.csv")
                point = forecast_matrix(frame, split.ids, f.h, column=name)
                forecasts[split_name] = (point, out["predict"][split_name])
                if intervals:
                    bounds = {c: forecast_matrix(frame, split.ids, f.h, column=c) for c in frame.columns
                              if c.startswith((f"{name}-lo-", f"{name}-hi-"))}
                    forecasts[split_name] += (bounds,)
    valid = out["valid"]  # (step, validation loss) at every check
    best = min(valid, key=lambda v: v[1])[0] if valid else ""
    extra = {"epochs": out["steps"], "best_epoch": best, "series_trained": len(val.ids), "history": json.dumps(valid)}
    ran = {**params, **out["trainer"], "neuralforecast": out["version"]}
    if intervals:
        ran["prediction_intervals"] = {**intervals, "method": "conformal_distribution"}
    return ran, out["fit"], extra, forecasts


def nf_installed(nf_python: str | None) -> bool:
    """Whether ``nf_python`` runs and imports neuralforecast."""
    if not nf_python:
        return False
    try:
        done = subprocess.run([nf_python, "-c", "import neuralforecast"], capture_output=True, timeout=300)
    except OSError:
        return False
    return done.returncode == 0


def worker_job(folder: Path) -> tuple[dict, dict]:
    """The job of a neuralforecast worker (``job.json``), its torch threads set and the logs quiet, and
    the Lightning trainer's settings every model gets."""
    import logging
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    for logger in ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning", "neuralforecast"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    job = json.loads((folder / "job.json").read_text())
    torch.set_num_threads(job["num_threads"])
    return job, {"accelerator": "cpu", "enable_progress_bar": False, "logger": False,
                 "enable_model_summary": False, "enable_checkpointing": False}


def nf_worker(folder: str) -> None:
    """Fit and forecast in the neuralforecast environment (numpy, pandas, torch, neuralforecast only)."""
    folder = Path(folder)
    job, trainer = worker_job(folder)
    import neuralforecast
    from neuralforecast import NeuralForecast
    from neuralforecast.models import NBEATS, NHITS

    model = {"NHITS": NHITS, "NBEATS": NBEATS}[job["model"]](**job["params"], **trainer)
    nf = NeuralForecast(models=[model], freq=1)
    intervals, calibrate, levels = job.get("intervals"), {}, {}
    if intervals:  # conformal intervals: k held-out windows, ``step_size`` apart
        from neuralforecast.utils import PredictionIntervals

        calibrate = {"prediction_intervals": PredictionIntervals(n_windows=intervals["n_windows"],
                                                                 step_size=intervals.get("step_size", 1))}
        levels = {"level": intervals["level"]}
    began = time.perf_counter()
    nf.fit(pd.read_csv(folder / "validation.csv"), val_size=job["val_size"], **calibrate)
    fit_seconds = time.perf_counter() - began
    seconds = {}
    for split_name in ("validation", "test"):
        if (folder / f"{split_name}.csv").exists():
            began = time.perf_counter()
            forecast = nf.predict(df=pd.read_csv(folder / f"{split_name}.csv"), **levels).reset_index()
            seconds[split_name] = time.perf_counter() - began
            bounds = [c for c in forecast.columns if intervals and c.startswith((f"{job['model']}-lo-",
                                                                                  f"{job['model']}-hi-"))]
            forecast[["unique_id", "ds", job["model"], *bounds]].to_csv(folder / f"forecast_{split_name}.csv",
                                                                       index=False)
    fitted_model = nf.models[0]
    train, valid = fitted_model.train_trajectories, fitted_model.valid_trajectories
    (folder / "out.json").write_text(json.dumps({
        "fit": fit_seconds, "predict": seconds, "steps": len(train),
        "valid": [[int(step), round(float(loss), 5)] for step, loss in valid], "version": neuralforecast.__version__,
        "trainer": {"accelerator": "cpu", "num_threads": job["num_threads"]}}))


def nf_windows(folder: str) -> None:
    """Fit on ``fit.csv`` with conformal intervals, then forecast after each of ``job["cutoffs"]`` (a row
    count: the history is the rows before it) from ``history.csv``; writes ``windows.csv`` (numpy,
    pandas, torch and neuralforecast only)."""
    folder = Path(folder)
    job, trainer = worker_job(folder)
    from neuralforecast import NeuralForecast
    from neuralforecast.models import NHITS
    from neuralforecast.utils import PredictionIntervals

    nf = NeuralForecast(models=[NHITS(**job["params"], **trainer)], freq=1)
    intervals = job["intervals"]
    began = time.perf_counter()
    nf.fit(pd.read_csv(folder / "fit.csv"), val_size=job["val_size"],
           prediction_intervals=PredictionIntervals(n_windows=intervals["n_windows"], step_size=intervals["step_size"]))
    fit_seconds = time.perf_counter() - began
    history = pd.read_csv(folder / "history.csv")
    parts = []
    for cutoff in job["cutoffs"]:
        window = history[history["ds"] < cutoff].groupby("unique_id").tail(job["params"]["input_size"])
        forecast = nf.predict(df=window, level=intervals["level"]).reset_index()
        parts.append(forecast.assign(cutoff=cutoff))
    pd.concat(parts).to_csv(folder / "windows.csv", index=False)
    (folder / "out.json").write_text(json.dumps({"fit": fit_seconds, "steps": len(nf.models[0].train_trajectories)}))


if __name__ == "__main__":
    workers = {"--nf-worker": nf_worker, "--nf-windows": nf_windows}
    if len(sys.argv) != 3 or sys.argv[1] not in workers:
        raise SystemExit("usage: m4_neuralforecast.py --nf-worker FOLDER | --nf-windows FOLDER")
    workers[sys.argv[1]](sys.argv[2])
