"""Which statistical models ``start="auto"`` should choose among: a screen of its candidates on nested validation.

    python benchmarks/start_candidates.py                      # short series, M4 Weekly and Hourly series (~1 h)
    python benchmarks/start_candidates.py --sources short      # the short-series benchmark's cells only
    python benchmarks/start_candidates.py --tables-only        # the RESULTS.md section from the rows

``start="auto"`` fits its candidate starts (an autoregression, exponential smoothing, an ARIMA) on the
training parts and keeps the one of lowest mean squared error on the validation windows. A rule that
chooses on validation cannot be judged there; so each fit is split once more, on its training part
only, as in ``benchmarks/start_selection.py``: the candidates are fitted on the steps before an inner
validation, the rule reads the inner validation, and it is scored on the outer block after it, which
no fit saw. Fold 1's outer block is the last v steps of the training part, fold 2's the v before them.
The test parts are never read.

Sources, each a user with one short series:

- ``short``: the cells of the short-series benchmark at the lengths the defaults were screened on
  (``start_selection.cells``; simulated processes at paths 0-2, classic series once), its split rule
  (v its validation steps; the inner split the rule at n - v);
- ``m4_weekly`` and ``m4_hourly``: M4 series evenly spread over those whose validation history
  (the training part without its last h, so M4's validation and test targets are never read) holds
  the benchmark's input and three horizons, fitted one at a time as a user with that one series
  would: the outer block is the history's last h steps (fold 2: the h before them), the inner
  validation the h before the block, the input M4's.

Every start reads the season the forecaster reads (the timestamps' natural period). Each (source,
series, n, seed, fold) is one row of ``results/start_candidates.jsonl`` with each candidate's inner
and outer mean squared error (on the series scaled by its fit part), so a rule is scored without a
refit; the section "start-candidates" of RESULTS.md is made from the rows.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from start_selection import cells  # noqa: E402

from tsrsa.benchmarking.folders import data_folder  # noqa: E402
from tsrsa.benchmarking.m4 import load_split  # noqa: E402
from tsrsa.benchmarking.results import machine_description, replace_section  # noqa: E402
from tsrsa.benchmarking.short_series import make_cell, split_rule  # noqa: E402
from tsrsa.benchmarking.simulated import PROCESSES  # noqa: E402
from tsrsa.data.frequency import Frequency  # noqa: E402
from tsrsa.start.fit import FITTERS, spread  # noqa: E402

ROWS = HERE / "results" / "start_candidates.jsonl"
SOURCES = ("short", "m4_weekly", "m4_hourly")
CANDIDATES = ("ar", "ets", "arima")
#: the rules screened: the candidate sets "auto" chooses among
RULES = {"ar, ets": ("ar", "ets"), "ar, ets, arima": ("ar", "ets", "arima"), "ar": ("ar",), "ets": ("ets",),
         "arima": ("arima",)}
KEY = ["source", "series", "n", "seed", "fold"]


def window_mse(start, z: np.ndarray, origins: np.ndarray, window: int, h: int) -> float:
    inputs = z[origins[:, None] - window + np.arange(window)[None, :]]
    targets = z[origins[:, None] + np.arange(h)[None, :]]
    return float(np.mean((start(inputs) - targets) ** 2))


def score(z: np.ndarray, fit_end: int, inner: np.ndarray, outer: np.ndarray, window: int, h: int,
          season: int) -> dict:
    """Each candidate fitted on ``z[:fit_end]`` (scaled by that part) and its MSE on the windows from the
    ``inner`` and the ``outer`` origins; a candidate without a fit is left out."""
    part = z[:fit_end]
    z = (z - part.mean()) / part.std()
    out = {}
    for name in CANDIDATES:
        began = time.perf_counter()
        try:
            start = FITTERS[name]([z[:fit_end]], window, h, season)
        except (ValueError, RuntimeError):
            continue
        out[name] = {"inner": window_mse(start, z, inner, window, h), "outer": window_mse(start, z, outer, window, h),
                     "seconds": round(time.perf_counter() - began, 3),
                     "form": start.record.get("forms", start.record.get("order"))}
    return out


def short_rows(folder, folds):
    for dataset, n in cells(folder):
        for seed in (0, 1, 2) if dataset in PROCESSES else (0,):
            cell = make_cell(dataset, n, seed, folder)
            season = (Frequency(pd.infer_freq(cell.index)).natural_periods() or [1])[0]
            v, h = cell.split.val_size, cell.split.h
            for fold in folds:
                end = n - (fold - 1) * v  # the outer block is the v steps before it
                try:
                    inner = split_rule(end - v, h, cell.split.season)
                except ValueError:
                    continue
                fit_end = end - v - inner.val_size
                scores = score(cell.z[:end], fit_end, np.arange(fit_end, end - v - h + 1),
                               np.arange(end - v, end - h + 1), inner.input_size, h, season)
                yield {"source": "short", "series": dataset, "n": n, "seed": seed, "fold": fold, "h": h,
                       "window": inner.input_size, "season": season, **scores}


def m4_rows(frequency: str, count: int, folder, folds):
    split = load_split(frequency, "validation", folder)
    freq = split.frequency
    h, window = freq.h, freq.input_size
    ids = [sid for sid in split.ids if len(split.history[sid]) >= window + 3 * h + (max(folds) - 1) * h]
    for sid in (ids[i] for i in spread(len(ids), count)):
        x = np.asarray(split.history[sid], dtype=np.float64)
        for fold in folds:
            end = len(x) - (fold - 1) * h
            scores = score(x[:end], end - 2 * h, np.array([end - 2 * h]), np.array([end - h]), window, h, freq.period)
            yield {"source": f"m4_{frequency.lower()}", "series": sid, "n": end, "seed": 0, "fold": fold, "h": h,
                   "window": window, "season": freq.period, **scores}


def read_rows() -> pd.DataFrame:
    if not ROWS.exists():
        return pd.DataFrame(columns=KEY)
    return pd.DataFrame([json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()])


def chosen(row, rule: tuple[str, ...]) -> str | None:
    """What "auto" over ``rule`` keeps in ``row``: the lowest inner MSE (the first listed of equal ones)."""
    fitted = [name for name in rule if isinstance(row.get(name), dict)]
    return min(fitted, key=lambda name: row[name]["inner"]) if fitted else None


def rule_table(rows: pd.DataFrame) -> str:
    """Per source: each rule's outer MSE over the current default's ("ar, ets"), geometric mean over the
    fits, with the fits it improves and worsens, and how often "arima" is chosen."""
    lines = ["| source | fits | " + " | ".join(RULES) + " | ar, ets, arima: 95 % | arima chosen "
             "| fit seconds (ar / ets / arima) |",
             "|---|---|" + "---|" * (len(RULES) + 3)]
    for source, part in [*rows.groupby("source", sort=False), ("all", rows)]:
        records = part.to_dict("records")
        base = np.array([r[chosen(r, RULES["ar, ets"])]["outer"] for r in records])
        cells = []
        for rule in RULES.values():
            picks = [chosen(r, rule) for r in records]
            if any(p is None for p in picks):
                cells.append("–")
                continue
            value = np.array([r[p]["outer"] for r, p in zip(records, picks)])
            ratio = np.exp(np.mean(np.log(np.maximum(value, 1e-300) / np.maximum(base, 1e-300))))
            cells.append(f"{ratio:.3f} ({int(np.sum(value < base))}/{int(np.sum(value > base))})")
        three = np.log([r[chosen(r, RULES["ar, ets, arima"])]["outer"] / r[chosen(r, RULES["ar, ets"])]["outer"]
                        for r in records])
        draws = np.random.default_rng(0).integers(0, len(three), (2000, len(three)))  # fits resampled
        low, high = np.exp(np.percentile(three[draws].mean(axis=1), [2.5, 97.5]))
        arima = np.mean([chosen(r, RULES["ar, ets, arima"]) == "arima" for r in records])
        seconds = [np.mean([r[c]["seconds"] for r in records if isinstance(r.get(c), dict)]) for c in CANDIDATES]
        lines.append(f"| {source} | {len(records)} | " + " | ".join(cells)
                     + f" | {low:.3f}–{high:.3f} | {arima:.0%} | " + " / ".join(f"{s:.2f}" for s in seconds) + " |")
    return "\n".join(lines)


def render(results_md: Path, command: str) -> None:
    rows = read_rows()
    if rows.empty:
        return
    body = "\n".join([
        "What: the candidate sets `start=\"auto\"` could choose among, each keeping the candidate of lowest mean "
        "squared error on an inner validation, scored on the outer block after it (nested validation on the "
        "training parts; the test parts never read). Per source, the geometric mean over the fits of each rule's "
        "outer MSE over the rule of 0.11 (\"ar, ets\"), with the fits it improves and those it worsens; then how "
        "often the three-way rule keeps the ARIMA and each candidate's mean fit time. The 95 % interval of the "
        "three-way rule's ratio resamples the fits (2,000 draws; the folds and paths of a cell counted apart).",
        "",
        rule_table(rows),
        "",
        f"Command: `{command}`. Date: {dt.date.today().isoformat()}. Machine: {machine_description()}. "
        f"Rows: [`benchmarks/results/{ROWS.name}`](results/{ROWS.name}).",
    ])
    replace_section(results_md, "start-candidates", body,
                    title="Which models the automatic start chooses among: a screen on nested validation")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--folds", default="1,2")
    parser.add_argument("--weekly-series", type=int, default=120, help="M4 Weekly series, evenly spread")
    parser.add_argument("--hourly-series", type=int, default=40, help="M4 Hourly series, evenly spread")
    parser.add_argument("--data-dir", help="the folder holding classic/ and m4/ (default: TSRSA_DATA_DIR)")
    parser.add_argument("--results-md", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    command = "python benchmarks/start_candidates.py"
    if args.tables_only:
        render(Path(args.results_md), command)
        return
    sources = [s for s in args.sources.split(",") if s]
    if not set(sources) <= set(SOURCES):
        parser.error(f"--sources: choose among {', '.join(SOURCES)}")
    folds = [int(f) for f in args.folds.split(",")]
    folder = data_folder(args.data_dir, HERE.parent.parent / "shared" / "datasets")
    done = {tuple(r[k] for k in KEY) for r in read_rows().to_dict("records")}
    runs = {"short": lambda: short_rows(folder / "classic", folds),
            "m4_weekly": lambda: m4_rows("Weekly", args.weekly_series, folder, folds),
            "m4_hourly": lambda: m4_rows("Hourly", args.hourly_series, folder, folds)}
    ROWS.parent.mkdir(parents=True, exist_ok=True)
    for source in sources:
        for row in runs[source]():
            if tuple(row[k] for k in KEY) in done:
                continue
            with ROWS.open("a") as out:
                out.write(json.dumps(row, default=str) + "\n")
            print(source, row["series"], row["n"], row["seed"], row["fold"], flush=True)
    render(Path(args.results_md), command)


if __name__ == "__main__":
    main()
