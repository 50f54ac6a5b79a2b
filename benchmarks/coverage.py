"""Conformal intervals on the long-horizon protocol: empirical coverage and width on the test split.

    python benchmarks/coverage.py                              # ETTh1, H96, DLinear and RSA
    python benchmarks/coverage.py --models DLinear --horizon 336 --no-write
    python benchmarks/coverage.py --models DLinear,Transformer,RSA --nf-python /work/nf-venv/bin/python

Each model fits the protocol's training and validation rows of every channel (input 96, the
library's defaults, ``val_size`` the validation rows, one thread) with ``conformal_windows`` held-out
horizons per channel (the calibration fit sees none of them; neither sees a test row), then
forecasts every stride-1 test window. For each level the row gives the share of test values inside
the interval (coverage, against the nominal level), the mean interval width and the test MSE, all in
the protocol's scaled units; once with the calibration of the fit throughout, once refreshed by
``update`` every ``h`` test rows (:func:`coverage`). Writes ``benchmarks/results/coverage.csv`` and
the section "Conformal intervals: coverage on the test split" of RESULTS.md. With ``--nf-python`` (an
environment with neuralforecast, ``requirements-neuralforecast.txt``) neuralforecast's NHITS with its
conformal intervals runs beside (:func:`nhits_coverage`), scored on every ``h``-th test window, where
RSA is scored too.
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.protocol import fit_frame, load_protocol_data, validation_size  # noqa: E402
from tsrsa.benchmarking.results import explicit_params, machine_description, replace_section  # noqa: E402
from tsrsa.benchmarking.scoring import window_views  # noqa: E402

RESULTS = HERE / "results"
LEVELS = (80.0, 95.0)
MODELS = {"DLinear": tsrsa.DLinearForecaster, "RSA": tsrsa.RSAForecaster, "Transformer": tsrsa.TransformerForecaster}


def coverage(model, data, h: int, refresh: bool = False, stride: int = 1) -> dict:
    """Coverage and mean width of each level, and MSE, over every test window of every channel.

    ``refresh``: the calibration as a user streaming the test gets it: after every ``h`` test rows
    ``model.update`` takes them in, and its calibration table takes in the errors of the forecast of
    those rows (the oldest drop out); a window is scored with the table as it stood at its cutoff
    (only errors of values observed by then). Without it, the table of the fit throughout. The point
    forecasts are the same either way (an update changes no weight). ``model`` is updated in place.
    ``stride``: score every ``stride``-th window only (``h``: the first of each block, as neuralforecast's).
    """
    memory, b = model.memory_, data.borders
    inside = {level: 0 for level in LEVELS}
    width = {level: 0.0 for level in LEVELS}
    sq, count = 0.0, 0
    views = []
    for c, channel in enumerate(data.channels):
        row = memory.ids.get_loc(channel)
        x, y = window_views(data, c, h, lookback=memory.tails.shape[1])  # (n, T), (n, h)
        m = len(x)
        loc, scale = np.full(m, memory.loc[row]), np.full(m, memory.scale[row])
        yhat = np.asarray(model.forecast_windows(x, loc, scale, h)["yhat"], dtype=np.float64)
        views.append((row, y, yhat))
        sq += float(np.square(yhat - y)[::stride].sum())
        count += y[::stride].size
    n = len(views[0][1])
    block = h if refresh else n
    for start in range(0, n, block):
        calibration = model.conformal_
        for row, y, yhat in views:
            picked = slice(start, start + block, stride)  # blocks of h start on the stride when it is h
            part, target = yhat[picked], y[picked]
            bounds = calibration.intervals(part, np.full(len(part), calibration.scale[row]), LEVELS)
            for level in LEVELS:
                name = int(level) if float(level).is_integer() else level
                lo, hi = bounds[f"yhat_lo_{name}"], bounds[f"yhat_hi_{name}"]
                inside[level] += int(((target >= lo) & (target <= hi)).sum())
                width[level] += float((hi - lo).sum())
        if refresh and start + block < n:  # the next h test rows arrive
            model.update(fit_frame(data, b.val_end + start, b.val_end + start + block))
    out = {"mse": sq / count, "values": count}
    for level in LEVELS:
        out[f"coverage_{int(level)}"] = inside[level] / count
        out[f"width_{int(level)}"] = width[level] / count
    return out


def run(dataset: str, h: int, names, k: int, seed: int, nf_python: str | None = None) -> pd.DataFrame:
    """The rows: each model's coverage over every test window with the fit's calibration and refreshed;
    with ``nf_python`` also NHITS's conformal intervals over every ``h``-th window, and RSA's over the same."""
    data = load_protocol_data(dataset)
    b = data.borders
    v = validation_size(data, h)
    frame = fit_frame(data, 0, b.train_end + v)
    rows = []
    base = {"date": dt.date.today().isoformat(), "dataset": dataset, "horizon": h, "seed": seed, "conformal_windows": k}
    for name in names:
        model = MODELS[name](h=h, input_size=data.input_size, val_size=v, conformal_windows=k, random_state=seed,
                             trainer={"num_threads": 1})
        start = time.perf_counter()
        model.fit(frame)
        seconds = time.perf_counter() - start
        strides = (1, h) if nf_python and name == "RSA" else (1,)
        fitted = copy.deepcopy(model)  # each refreshed run updates its own copy
        for stride, (calibration, refresh) in itertools.product(strides, (("fixed at fit", False),
                                                                          ("updated every h", True))):
            scored = copy.deepcopy(fitted) if refresh else fitted
            row = {**base, "model": name, "calibration": calibration, "windows": "all" if stride == 1 else f"every {h}th",
                   "calibration_rows": len(model.conformal_.residuals), "fit_seconds": round(seconds, 1),
                   **coverage(scored, data, h, refresh, stride), "params": explicit_params(model),
                   "machine": machine_description() + ", 1 thread"}
            print({key: row[key] for key in row if key not in ("machine", "params")}, flush=True)
            rows.append(row)
    if nf_python:
        rows.append({**base, **nhits_coverage(data, h, k, seed, nf_python)})
    return pd.DataFrame(rows)


def nhits_coverage(data, h: int, k: int, seed: int, nf_python: str) -> dict:
    """neuralforecast's NHITS (the M4 benchmark's settings, ``m4_neuralforecast.NF_SETTINGS``) with its
    conformal intervals (``PredictionIntervals(n_windows=k, step_size=h)``, per series), fitted on the
    training and validation rows, forecasting after every ``h``-th test cutoff: the row of the table."""
    from m4_neuralforecast import NF_SETTINGS

    b = data.borders
    n = b.n_windows("test", h)
    cutoffs = list(range(b.val_end, b.val_end + n, h))
    params = {"h": h, "input_size": data.input_size, "random_seed": seed, **NF_SETTINGS}
    intervals = {"level": [int(level) for level in LEVELS], "n_windows": k, "step_size": h}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fit_frame(data, 0, b.val_end).to_csv(tmp / "fit.csv", index=False)
        fit_frame(data, 0, b.val_end + n - 1 + h).to_csv(tmp / "history.csv", index=False)
        (tmp / "job.json").write_text(json.dumps({"params": params, "val_size": validation_size(data, h),
                                                  "intervals": intervals, "cutoffs": cutoffs, "num_threads": 1}))
        subprocess.run([nf_python, str(HERE / "m4_neuralforecast.py"), "--nf-windows", str(tmp)], check=True)
        out = json.loads((tmp / "out.json").read_text())
        windows = pd.read_csv(tmp / "windows.csv")
    column = {channel: c for c, channel in enumerate(data.channels)}
    actual = data.scaled[windows["ds"].to_numpy(), windows["unique_id"].map(column).to_numpy()]
    row = {"model": "NHITS (neuralforecast)", "calibration": "its conformal, fixed at fit", "windows": f"every {h}th",
           "calibration_rows": k * len(data.channels), "fit_seconds": round(out["fit"], 1),
           "mse": float(np.mean((windows["NHITS"] - actual) ** 2)), "values": len(windows),
           "params": json.dumps({**params, "prediction_intervals": intervals}),
           "machine": machine_description() + ", 1 thread"}
    for level in LEVELS:
        lo, hi = windows[f"NHITS-lo-{int(level)}"], windows[f"NHITS-hi-{int(level)}"]
        row[f"coverage_{int(level)}"] = float(((actual >= lo) & (actual <= hi)).mean())
        row[f"width_{int(level)}"] = float((hi - lo).mean())
    print({key: row[key] for key in row if key not in ("machine", "params")}, flush=True)
    return row


def section(table: pd.DataFrame, command: str) -> str:
    lines = ["What: conformal intervals (`conformal_windows` held-out horizons per channel, the library's defaults "
             "otherwise) on the long-horizon protocol's test split: the share of test values inside each interval "
             "against its nominal level, the mean width and the test MSE, in the protocol's scaled units. "
             "*Calibration*: the table of the fit throughout (fixed at fit), or as a user streaming the test gets "
             "it (updated every h): after every h test rows `update` takes them in and the table takes in the "
             "errors of the forecast of those rows, the oldest dropping out; each window is scored with the "
             "table as it stood at its cutoff.\n",
             "| data set | h | model | windows held out per channel | calibration | test windows | coverage 80 % | "
             "width 80 % | coverage 95 % | width 95 % | test MSE | fit (s) |", "|---" * 12 + "|"]
    for _, r in table.iterrows():
        lines.append(f"| {r.dataset} | {r.horizon} | {r.model} | {r.conformal_windows} | {r.calibration} | "
                     f"{r.get('windows', 'all')} | "
                     f"{100 * r.coverage_80:.1f} % | "
                     f"{r.width_80:.3f} | {100 * r.coverage_95:.1f} % | {r.width_95:.3f} | {r.mse:.3f} | "
                     f"{r.fit_seconds:.0f} |")
    lines += ["", f"Command: `{command}`. Date: {table['date'].iloc[0]}. Machine: {table['machine'].iloc[0]}. "
              f"Rows: [`benchmarks/results/coverage.csv`](results/coverage.csv)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ETTh1")
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--models", default="DLinear,RSA")
    parser.add_argument("--conformal-windows", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nf-python", default=None,
                        help="python of an environment with neuralforecast: NHITS's conformal intervals beside")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    table = run(args.dataset, args.horizon, args.models.split(","), args.conformal_windows, args.seed,
                args.nf_python)
    text = section(table, " ".join(["python benchmarks/coverage.py", *(sys.argv[1:] if argv is None else argv)]))
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        table.to_csv(RESULTS / "coverage.csv", index=False)
        replace_section(HERE / "RESULTS.md", "conformal-coverage", text,
                        title="Conformal intervals: coverage on the test split")


if __name__ == "__main__":
    main()
