"""How much of a trained network's correction to its statistical start to keep: a screen on nested validation.

    python benchmarks/start_blend.py                     # RSA and the twin, every cell, seeds 0-2, two blocks
    python benchmarks/start_blend.py --models LSTM,DLinear
    python benchmarks/start_blend.py --tables-only       # the RESULTS.md section from the rows

A neural forecaster started at a statistical model forecasts ``S + C``: the start's forecast S and the
network's correction C, trained from zero. A forecast ``S + a C`` keeps a share ``a`` of the correction
(a = 1: the trained network, a = 0: the start alone); a combination of the two forecasts, as the M4
hybrids and forecast combinations have it. The correction is linear in the network's output layers, so
``a`` is the factor on their weights and biases.

Each fit is the defaults' with ``start_weight=0`` (the whole correction), the shares applied to its
forecasts. The nested split of ``benchmarks/start_selection.py`` (each cell of the short-series
benchmark fitted on the steps before an outer block of v training steps, the protocol's validation at
their end; fold 1 the last v training steps, fold 2 the v before them; the test part never read) scores
each rule on the outer block, which no fit saw. Rules: a fixed share a, and a share fitted per fit by least squares on the inner
validation windows (the windows early stopping read), clipped to [0, 1]. A row keeps, per window, the
means over the horizon of e², e c and c² (e = S - y, c = C), from which the squared error of every share
follows: ``e² + 2 a e c + a² c²``. Rows go to ``results/start_blend.jsonl``, one per (model, cell, seed,
fold) as it ends.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from start_selection import nested_fit, nested_options, row_head, run_missing  # noqa: E402

from tsrsa.benchmarking.results import read_run_log, replace_section  # noqa: E402
from tsrsa.benchmarking.short_series import window_forecasts  # noqa: E402

ROWS = HERE / "results" / "start_blend.jsonl"
#: the fixed shares of the correction the table scores (1: the trained network as it is)
SHARES = (1.0, 0.75, 0.5, 0.25, 0.0)
#: the fits are the defaults' with the whole correction kept (``start_weight=0``), the shares applied after
AS_TRAINED = 0.0


def run_cell(model_name: str, dataset: str, n: int, seed: int, folder: Path | None, fold: int) -> dict | None:
    fit = nested_fit(model_name, dataset, n, seed, folder, fold, {"start_weight": AS_TRAINED})
    if fit is None:
        return None
    model, alone, z, inner, origins = fit
    h = model.h
    row = {**row_head(model_name, dataset, n, seed, fold, model, inner), "start_weight": AS_TRAINED,
           "ensemble_size": int(getattr(model, "ensemble_size_", 1))}
    for part, at in origins.items():
        targets = z[at[:, None] + np.arange(h)[None, :]]
        start = window_forecasts(alone, z, at, h)
        e, c = start - targets, window_forecasts(model, z, at, h) - start
        for name, values in (("ee", e * e), ("ec", e * c), ("cc", c * c)):
            row[f"{part}_{name}"] = [float(f"{x:.7g}") for x in np.mean(values, axis=1)]  # 7 digits: a smaller file
    return row


def fitted_share(row) -> float:
    """The share of lowest squared error on the inner validation windows, in [0, 1] (1 without a correction)."""
    cc = float(np.sum(row["inner_cc"]))
    return 1.0 if cc <= 0 else float(np.clip(-np.sum(row["inner_ec"]) / cc, 0.0, 1.0))


def outer_mse(row, share: float) -> float:
    ee, ec, cc = (np.asarray(row[f"outer_{k}"]) for k in ("ee", "ec", "cc"))
    return float(np.mean(ee + 2 * share * ec + share * share * cc))


def scored(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row: the outer validation MSE of each fixed share and of the fitted one (column "fitted")."""
    out = rows[["model", "dataset", "n", "seed", "fold"]].copy()
    records = rows.to_dict("records")
    for share in SHARES:
        out[share] = [outer_mse(r, share) for r in records]
    out["share"] = [fitted_share(r) for r in records]
    out["fitted"] = [outer_mse(r, s) for r, s in zip(records, out["share"])]
    return out


def interval(ratios: np.ndarray, draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % interval of the geometric mean of ``ratios``, the fits resampled."""
    logs = np.log(ratios)
    means = np.random.default_rng(seed).choice(logs, size=(draws, len(logs))).mean(axis=1)
    return tuple(float(np.exp(q)) for q in np.quantile(means, [0.025, 0.975]))


def section(rows: pd.DataFrame, command: str) -> str:
    table = scored(rows)
    columns = [*SHARES, "fitted"]
    lines = ["What: a network at the defaults forecasts its start S plus a share a of its trained correction C "
             "(a = 1: the network as trained; a = 0: the start alone; \"fitted\": a by least squares on the inner "
             "validation windows, clipped to [0, 1]). Nested validation on the short-series benchmark, as in "
             "\"Keeping the statistical start\": fitted on the training steps before an outer block of v steps, "
             "scored on that block (fold 1: the last v training steps; fold 2: the v before them; the test part "
             "never read). Geometric mean of each rule's outer validation MSE over the network's (a = 1), with "
             "the fits it improves against those it worsens; then the fitted shares' median and the 95 % interval of "
             "a = 0.5 (fits resampled).\n",
             "| model | fold | fits | " + " | ".join(f"a = {c:g}" if c != "fitted" else "a fitted" for c in columns)
             + " | median fitted a | a = 0.5, 95 % |", "|---|---|---|" + "---|" * (len(columns) + 2)]
    groups = [(model, fold, group) for (model, fold), group in table.groupby(["model", "fold"], sort=False)]
    if table["fold"].nunique() > 1:
        groups += [(model, "both", group) for model, group in table.groupby("model", sort=False)]
    for model, fold, group in groups:
        cells_ = []
        for column in columns:
            ratio = group[column] / group[1.0]
            cells_.append(f"{float(np.exp(np.mean(np.log(ratio)))):.3f} "
                          f"({int((ratio < 1 - 1e-9).sum())}/{int((ratio > 1 + 1e-9).sum())})")
        low, high = interval((group[0.5] / group[1.0]).to_numpy())
        lines.append(f"| {model} | {fold} | {len(group)} | " + " | ".join(cells_)
                     + f" | {float(group['share'].median()):.2f} | {low:.3f}–{high:.3f} |")
    lines += ["", f"Command: `{command}`. Date: {rows['date'].max()}. Machine: {rows['machine'].iloc[-1]}. "
              f"Rows: [`benchmarks/results/start_blend.jsonl`](results/start_blend.jsonl)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    args = nested_options(__doc__.splitlines()[0], ROWS, "1,2").parse_args(argv)
    if not args.tables_only:
        run_missing(run_cell, args)
    rows = pd.DataFrame(read_run_log(args.rows))
    models = ",".join(rows["model"].unique())
    text = section(rows, f"python benchmarks/start_blend.py --models {models} --folds "
                   + ",".join(map(str, sorted(rows["fold"].unique()))))
    print(text)
    replace_section(args.results_md, "start-blend", text,
                    title="Keeping a share of the network's correction: a blend screened on nested validation")


if __name__ == "__main__":
    main()
