"""How many torch threads a default fit should take: fits at one thread and at torch's own count, on an
idle machine and beside a process that keeps one core busy.

    python benchmarks/threads.py                  # every case, 3 repeats, ~10 minutes on 2 cores
    python benchmarks/threads.py --repeats 1 --cases short

The busy neighbour is a second Python process spinning on one core for the length of each fit (what a
notebook's kernel, a compile or another fit does to a laptop). Each case fits the same forecaster at
its defaults but for ``num_threads`` and a budget in epochs (so both thread counts run the same steps),
after an untimed warm-up fit in the same process. Writes rows to ``benchmarks/results/threads.csv``
(one per fit, with the parameters, the load it ran beside and the date).
"""
from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import torch  # noqa: E402

import tsrsa  # noqa: E402
from tsrsa.benchmarking.results import machine_description  # noqa: E402

try:
    from tsrsa.benchmarking.compat import trainer_kwargs
except ImportError:  # a release before 0.15 imported: the helper of this checkout, by path
    import importlib.util

    _spec = importlib.util.spec_from_file_location("tsrsa_benchmarking_compat",
                                                   HERE.parent / "tsrsa" / "benchmarking" / "compat.py")
    _compat = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_compat)
    trainer_kwargs = _compat.trainer_kwargs

RESULTS = HERE / "results"


def data_folder() -> Path:
    return Path(os.environ.get("TSRSA_DATA_DIR", HERE.parents[1] / "shared" / "datasets"))


def cases() -> dict:
    """name -> (forecaster class, data, parameters): a short series, a panel, one long series."""
    air = pd.read_csv(data_folder() / "classic" / "AirPassengers.csv")
    short = pd.Series(air.iloc[:, 1].astype(float).to_numpy(), name="air",
                      index=pd.date_range("1949-01-01", periods=len(air), freq="MS"))
    ett = pd.read_csv(data_folder() / "ETTh1.csv", parse_dates=["date"]).iloc[:8640]
    long = pd.Series(ett["OT"].to_numpy(), index=pd.DatetimeIndex(ett["date"]), name="OT")
    rng = np.random.default_rng(0)
    t = np.arange(200)
    panel = pd.DataFrame({f"s{i}": 10 + np.sin(2 * np.pi * t / 12 + i) + 0.3 * rng.standard_normal(200)
                          for i in range(20)}, index=pd.date_range("2000-01-01", periods=200, freq="MS"))
    return {
        "short": (short, dict(h=12, max_epochs=30)),
        "panel": (panel, dict(h=12, max_epochs=10)),
        "long": (long, dict(h=96, max_epochs=1)),
    }


def spin(seconds: float) -> None:
    """Keep one core busy for ``seconds`` (the busy neighbour)."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def one_fit(model_name: str, data, params: dict, threads: int | None) -> float:
    cls = getattr(tsrsa, f"{model_name}Forecaster")
    model = cls(**params, random_state=0, **trainer_kwargs(cls, {"num_threads": threads}))  # trainer= from 0.15
    start = time.perf_counter()
    model.fit(data)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="short,panel,long")
    parser.add_argument("--models", default="Transformer,LSTM")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS / "threads.csv"))
    args = parser.parse_args(argv)
    default_threads = torch.get_num_threads()
    table = cases()
    out = Path(args.output)
    for case in args.cases.split(","):
        data, params = table[case]
        for model_name in args.models.split(","):
            one_fit(model_name, data, {**params, "max_epochs": 1}, 1)  # warm-up: imports, first calls
            for repeat in range(args.repeats):
                for neighbour in ("idle", "one core busy"):
                    for threads in (1, None):
                        busy = None
                        if neighbour != "idle":
                            busy = mp.get_context("spawn").Process(target=spin, args=(600.0,), daemon=True)
                            busy.start()
                            time.sleep(0.5)
                        try:
                            seconds = one_fit(model_name, data, params, threads)
                        finally:
                            if busy is not None:
                                busy.terminate()
                                busy.join()
                        row = {"date": dt.date.today().isoformat(), "case": case, "model": model_name,
                               "repeat": repeat, "neighbour": neighbour,
                               "threads": threads if threads is not None else f"default ({default_threads})",
                               "params": str(params), "fit_seconds": round(seconds, 3),
                               "load_before": round(os.getloadavg()[0], 2),
                               "machine": machine_description()}
                        pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
                        print(row, flush=True)


if __name__ == "__main__":
    main()
