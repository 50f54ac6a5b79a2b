"""What REM heads add once the network starts at the statistical model: the ablation on the
short-series benchmark.

    python benchmarks/start_ablation.py            # reads short_series.csv, writes its RESULTS.md section
    python benchmarks/start_ablation.py --start ets

Five configurations per cell (series, training length, seed), at the library's defaults otherwise:
(a) the statistical start under RSA, (b) the same start under the twin (``TransformerForecaster``),
(c) RSA without a start, (d) the twin without one, (e) the start alone: the statistical model's
forecast through the same linear map, fitted on the same training part, no network. (a)-(d) are
the rows ``benchmarks/short_series.py --models RSA,Transformer --params '{"start": "ar"}'`` (and
without ``--params``) wrote; (e) is computed here (deterministic, seconds). REM heads pay where (a)
beats (b); the start pays where (a) beats (c) and (b) beats (d); the network pays where (a) beats (e).
"""
from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.defaults_screen import (  # noqa: E402
    ADDED, CHOICES, SHORT_FITS, choices_of, same_configuration, spelt_auto,
)
from tsrsa.benchmarking.folders import data_folder  # noqa: E402
from tsrsa.benchmarking.results import replace_section  # noqa: E402
from tsrsa.benchmarking.short_series import make_cell, score_windows  # noqa: E402
from tsrsa.start.fit import fit_start  # noqa: E402

CONFIGS = {"a": ("RSAForecaster", True), "b": ("TransformerForecaster", True), "c": ("RSAForecaster", False),
           "d": ("TransformerForecaster", False)}
NAMES = {"a": "S + RSA", "b": "S + twin", "c": "RSA, no start", "d": "twin, no start", "e": "S alone"}


def start_alone(cell, model: str) -> dict:
    """(e): the start fitted on the cell's training part (before validation), scored on validation and test."""
    s, z = cell.split, cell.z
    fit_part, held_out = z[: cell.n - s.val_size], z[cell.n - s.val_size: cell.n]
    start = fit_start(model, [fit_part], s.input_size, s.h, s.season or 1, [held_out])
    scores = {}
    for part in ("val", "test"):
        origins = cell.origins(part)
        windows = z[origins[:, None] - s.input_size + np.arange(s.input_size)[None, :]]
        scores[part] = score_windows(start(windows), z, origins)[0]
    return scores


def is_default(params: str, start: str | None, model: str, base: dict | None = None) -> bool:
    """A row of ``model`` at the library's defaults, with the model choices in ``base`` over them, but for
    ``start`` (and the run's own keys); a short-series row at what "auto" gives there counts as "auto"."""
    defaults = {**default_params(model), **(base or {})}
    ran = {**json.loads(params), **{k: choices_of(params)[k] for k in ADDED}}  # absent: as before they existed
    ran = spelt_auto(ran, defaults, SHORT_FITS)
    return same_configuration(params, defaults) and ran.get("start") == start and ran.get("max_epochs") == "auto" \
        and all(json.dumps(ran.get(k, defaults.get(k))) == json.dumps(defaults.get(k)) for k in CHOICES if k != "start")


@functools.cache
def default_params(model: str) -> dict:
    from tsrsa.estimator.trainer import flat_params

    cls = getattr(tsrsa, model)
    return flat_params(cls(h=1).get_params(), cls)  # every option by its own name, as the rows record them


def collect(short: pd.DataFrame, start: str, folder: Path | None, base: dict | None = None) -> pd.DataFrame:
    """One row per (dataset, train_length, seed) where (a)-(d) all ran: val and test MSE of (a)-(e)."""
    frames = []
    for key, (model, started) in CONFIGS.items():
        chosen = start if started else None
        rows = short[(short["model"] == model) & short["params"].map(lambda p: is_default(p, chosen, model, base))]
        rows = rows.sort_values("date").groupby(["dataset", "train_length", "seed"]).last()
        frames.append(rows[["val_mse", "test_mse"]].add_prefix(f"{key}_"))
    table = pd.concat(frames, axis=1, join="inner").reset_index()
    alone = [start_alone(make_cell(r.dataset, int(r.train_length), int(r.seed), folder), start)
             for r in table.itertuples()]
    return table.assign(e_val_mse=[a["val"] for a in alone], e_test_mse=[a["test"] for a in alone])


def geo(ratio: pd.Series) -> float:
    ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
    return math.exp(float(np.log(ratio).mean())) if len(ratio) else math.nan


def section(table: pd.DataFrame, start: str, simulated: set[str], command: str, base: dict | None = None) -> str:
    setting = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in (base or {}).items())
    lines = [f"What: the statistical start `start=\"{start}\"` with and without REM heads on the short-series "
             f"benchmark (the library's defaults otherwise{', with ' + setting if setting else ''}; seeds as run): "
             + ", ".join(
                 f"({k}) {v}" for k, v in NAMES.items()) + ". Mean test MSE over seeds per cell (scaled units).\n",
             "| series | n | seeds | " + " | ".join(f"({k}) {v}" for k, v in NAMES.items()) + " | a / b |",
             "|---|---|---|" + "---|" * (len(NAMES) + 1)]
    cells = table.groupby(["dataset", "train_length"])
    for (dataset, n), g in cells:
        means = {k: g[f"{k}_test_mse"].mean() for k in NAMES}
        lines.append(f"| {dataset} | {n} | {len(g)} | " + " | ".join(f"{means[k]:.3f}" for k in NAMES)
                     + f" | {means['a'] / means['b']:.3f} |")
    lines += ["", "Geometric means of the per-run ratios (below 1: the first is better), on validation and on test:\n",
              "| comparison | what it measures | runs | validation | test | test wins |", "|---|---|---|---|---|---|"]
    pairs = [("a", "b", "what REM adds on top of the start"), ("c", "d", "what REM adds without a start"),
             ("a", "c", "what the start adds to RSA"), ("b", "d", "what the start adds to the twin"),
             ("a", "e", "what the network adds to the start")]
    for x, y, what in pairs:
        test = table[f"{x}_test_mse"] / table[f"{y}_test_mse"]
        lines.append(f"| ({x}) / ({y}) | {what} | {len(table)} | "
                     f"{geo(table[f'{x}_val_mse'] / table[f'{y}_val_mse']):.3f} | {geo(test):.3f} | "
                     f"{int((test < 1).sum())}/{len(test)} |")
    sim = table["dataset"].isin(simulated)
    for name, part in (("simulated", table[sim]), ("classic", table[~sim])):
        if len(part):
            lines.append(f"\n{name.capitalize()} series only, (a) / (b): validation "
                         f"{geo(part['a_val_mse'] / part['b_val_mse']):.3f}, test "
                         f"{geo(part['a_test_mse'] / part['b_test_mse']):.3f} ({len(part)} runs).")
    lines.append(f"\nCommand: `{command}`. Date: {dt.date.today().isoformat()} (the runs: their rows' dates in "
                 "`benchmarks/results/short_series.csv`).")
    return "\n".join(lines) + "\n"


#: the M4 arm: (m4.csv model, label) per configuration; (a)-(d) were run side by side on one GPU, (e) is the
#: twin with the start and a learning rate of 1e-12 for one epoch, whose output path then stays at zero
M4_ARMS = {"a": ("RSA", "accelerator=gpu,start=ar"), "b": ("Transformer", "accelerator=gpu,start=ar"),
           "c": ("RSA", "accelerator=gpu"), "d": ("Transformer", "accelerator=gpu"),
           "e": ("Transformer", "learning_rate=1e-12,max_epochs=1,start=ar")}
M4_COMMAND = ("python benchmarks/m4.py --models M --frequencies F --splits S --seeds 0,1,2 --set accelerator=gpu "
              "[--set start=ar]` (M: RSA, Transformer; S: validation, or test, which also refits for validation), "
              "and for (e) `python benchmarks/m4.py --models Transformer --frequencies Hourly,Weekly --splits test "
              "--seeds 0 --set start=ar --set learning_rate=1e-12 --set max_epochs=1")


def m4_arm(m4: pd.DataFrame) -> str:
    """The ablation on M4's global fits: OWA, sMAPE and MASE per configuration, frequency and split (mean
    over every run: repeated runs of a seed on the GPU differ and all count), and the ratios of mean OWA."""
    lines = ["\n**M4 (one global model per frequency)**: mean OWA (sMAPE / MASE) over the runs; runs in brackets.\n",
             "| frequency | split | " + " | ".join(f"({k}) {NAMES[k]}" for k in M4_ARMS)
             + " | a / b | c / d | a / c | b / d |", "|---|---|" + "---|" * (len(M4_ARMS) + 4)]
    for (freq, split), g in m4.groupby(["frequency", "split"], sort=True):
        owa, cells = {}, []
        for k, (model, label) in M4_ARMS.items():
            runs = g[(g["model"] == model) & (g["label"] == label)]
            owa[k] = runs["owa"].mean() if len(runs) else math.nan
            cells.append(f"{owa[k]:.3f} ({runs['smape'].mean():.2f} / {runs['mase'].mean():.3f}) [{len(runs)}]"
                         if len(runs) else "—")
        ratios = [f"{owa[x] / owa[y]:.3f}" if np.isfinite(owa[x] / owa[y]) else "—"
                  for x, y in (("a", "b"), ("c", "d"), ("a", "c"), ("b", "d"))]
        lines.append(f"| {freq} | {split} | " + " | ".join(cells + ratios) + " |")
    lines.append(f"\n(a)-(d): on one NVIDIA H100, twelve fits side by side; (e): the 2-core CPU. Commands: "
                 f"`{M4_COMMAND}`. Rows in `benchmarks/results/m4.csv` (their dates and machines there).")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    from tsrsa.benchmarking.simulated import PROCESSES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", default="ar", choices=("ar", "ets", "auto"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--base", default="{}", help="model choices over the defaults, as JSON (e.g. the loss)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    short = pd.read_csv(HERE / "results" / "short_series.csv", dtype={"params": str})
    folder = data_folder(args.data_dir, HERE.parent.parent / "shared" / "datasets") / "classic"
    base = json.loads(args.base)
    table = collect(short, args.start, folder, base)
    if table.empty:
        raise SystemExit("start_ablation.py: no cell has all of (a)-(d); run benchmarks/short_series.py first")
    command = "python benchmarks/start_ablation.py" + ("" if args.start == "ar" else f" --start {args.start}") \
        + (f" --base '{args.base}'" if base else "")
    text = section(table, args.start, set(PROCESSES), command, base)
    if args.start == "ar" and not base:
        m4 = pd.read_csv(HERE / "results" / "m4.csv", dtype={"label": str})
        text += m4_arm(m4[m4["label"].isin({label for _, label in M4_ARMS.values()})])
    print(text)
    if not args.no_write:
        replace_section(HERE / "RESULTS.md", f"start-ablation-{args.start}", text,
                        title=f"The statistical start and REM heads: ablation (start=\"{args.start}\")")


if __name__ == "__main__":
    main()
