"""AutoForecaster on one series alone: a short series' validation, from the M3 study's rows.

    python benchmarks/auto_single.py

A user fitting one series fits a panel of one: no other series ranks the candidates for it. Each M3 series of
the study (``auto_m3_study.py``'s rows: SeasonalNaive, ETS, ARIMA and Theta, fitted on that series alone) is
scored as such a panel with AutoForecaster's own arithmetic (the study's ``rule_weights`` of the default rule),
at both of the study's origins: ``later`` (fitted on the training part less h, scored on the training part's last
h values) and ``test`` (fitted on the training part, scored on the test part; read for no choice). Three versions:

- ``0.19.4``: the candidates' rows of that release (:data:`BEFORE`: ARIMA, ETS and Theta refused a series
  shorter than three, two and two seasons), always two windows; a series that holds the validation of one
  candidate keeps it, one that holds none is refused (ValueError);
- ``candidates``: the candidates' latest rows (0.19.5: they fit such a series with what it holds), two windows
  as above: what the candidates' change alone does;
- ``0.19.5``: the latest rows, two windows where some candidates' two validate, else one, and where even one
  validates fewer than two candidates, the mean of the candidates that fit the series (``basis`` "unranked").

Only the series where the versions differ are listed.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from auto_m3_data import CANDIDATES, HORIZON, OUTPUT, SEASON, data_folder, read_values
from auto_m3_rules import SeriesList, latest_rows, panel_arrays, rule_weights

#: the versions compared (module docstring)
VERSIONS = ("0.19.4", "candidates", "0.19.5")
#: AutoForecaster's default rule on a panel of one series, as the study names it ("auto" keeps the gate there)
DEFAULT_RULE = "noise2_gate_all"
#: the releases whose rows were 0.19.4's candidates
BEFORE = {"ARIMA": "0.19.2", "ETS": "0.19.0", "Theta": "0.19.0", "SeasonalNaive": "0.19.0"}


def weights_of(inner: np.ndarray, targets: np.ndarray, before: np.ndarray, scored: np.ndarray, m: int,
               names) -> np.ndarray | None:
    """(C,) the default rule's weights for one series from its inner forecasts (C, W, h) of ``targets`` (W, h),
    ``before`` the values before the block, ``scored`` (C, h) the forecasts it keeps from (a candidate without one
    is blocked, as a failed refit is); None where no candidate was validated."""
    from tsrsa.estimator.model_choice import naive_scale, scaled_errors

    scale = naive_scale(SeriesList([before]), np.array([len(before)]), m)
    errors = scaled_errors(inner[None], targets[None], scale)  # (1, C)
    if not np.isfinite(errors).any():
        return None
    steps = np.abs(inner[None] - targets[None, None]) / scale[:, None, None, None]
    blocked = ~np.isfinite(scored).all(axis=1)[None]
    return rule_weights(errors, ["series"], names, DEFAULT_RULE, blocked, steps)[0]


def validated(inner: np.ndarray) -> int:
    """How many candidates forecast every window of ``inner`` (C, W, h)."""
    return int(np.isfinite(inner.reshape(len(inner), -1)).all(axis=1).sum())


def origins(values: np.ndarray, h: int, arrays: dict, i: int) -> dict:
    """origin -> (history, two windows' inner forecasts, one window's, the scored forecasts, the target)."""
    train, test = values[:-h], values[-h:]
    return {"later": (train[:-h], arrays["cv2_fit1"][i], arrays["cv2"][i][:, :1], arrays["cv1"][i], train[-h:]),
            "test": (train, arrays["cv2"][i], arrays["cv1"][i][:, None], arrays["final"][i], test)}


def weights(version: str, history, two, one, scored, h: int, m: int, names) -> np.ndarray | None:
    """The weights ``version`` gives one series at one origin (None: refused)."""
    inner = two
    if version == "0.19.5" and validated(two) < 2:
        if validated(one) < 2:  # unranked: the mean of what fits
            fits = np.isfinite(scored).all(axis=1)  # every candidate here is statistical
            return fits / fits.sum() if fits.any() else None
        inner = one
    W = inner.shape[1]
    if len(history) <= W * h:  # no candidate could be validated
        return None
    return weights_of(inner, history[len(history) - W * h:].reshape(W, h), history[: len(history) - W * h], scored,
                      m, names)


def per_series(output: Path, data: Path, before: dict | None = None) -> pd.DataFrame:
    """One line per (series, origin) of the study's rows: each version's score (NaN where refused); ``before``:
    {model: release} of 0.19.4's rows (default :data:`BEFORE`)."""
    from tsrsa.benchmarking.m3_sample import mase, smape
    from tsrsa.estimator.model_choice import combined

    names = list(CANDIDATES)
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    rows = rows[rows["model"].isin(names)]
    sets = {"0.19.4": latest_rows(rows, use=BEFORE if before is None else before), "latest": latest_rows(rows)}
    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    per = []
    for subset in sets["latest"]["subset"].unique():
        h, m = HORIZON[subset], SEASON[subset]
        arrays = {key: panel_arrays(part[part["subset"] == subset], names, None, h)[:2] for key, part in sets.items()}
        ids = arrays["latest"][0]
        values = read_values(data, info[info["unique_id"].isin(ids)].assign(draw=0))
        for i, sid in enumerate(ids):
            old = arrays["0.19.4"][0].index(sid)
            for origin in ("later", "test"):
                row = {"subset": subset, "unique_id": sid, "origin": origin}
                for version in VERSIONS:
                    key, k = ("0.19.4", old) if version == "0.19.4" else ("latest", i)
                    history, two, one, scored, target = origins(values[sid], h, arrays[key][1], k)[origin]
                    w = weights(version, history, two, one, scored, h, m, names)
                    forecast = None if w is None else combined(w[None], scored[None])[0]
                    row[f"{version} sMAPE"] = np.nan if w is None else smape(target, forecast)
                    row[f"{version} MASE"] = np.nan if w is None else mase(target, forecast, history, m)
                    row[f"{version} kept"] = "" if w is None else "+".join(n for n, x in zip(names, w) if x > 0)
                per.append(row)
    return pd.DataFrame(per)


def pair(part: pd.DataFrame, first: str, second: str) -> dict:
    """The series both versions forecast and each one's mean scores there."""
    both = part.dropna(subset=[f"{first} sMAPE", f"{second} sMAPE"])
    return {f"{first} & {second}": len(both), **{f"{first} & {second}: {v} {metric}": both[f"{v} {metric}"].mean()
                                                  for v in (first, second) for metric in ("sMAPE", "MASE")}}


def table(per: pd.DataFrame) -> pd.DataFrame:
    """Per subset and origin, the series where the versions differ: refusals and mean scores of 0.19.5 against
    each of the others where both forecast."""
    scores = per[[f"{v} sMAPE" for v in VERSIONS]]
    differ = per[scores.nunique(axis=1, dropna=False) > 1]
    lines = []
    for (subset, origin), part in differ.groupby(["subset", "origin"], sort=False):
        lines.append({"subset": subset, "origin": origin, "series": len(part),
                      **{f"refused {v}": int(part[f"{v} sMAPE"].isna().sum()) for v in VERSIONS},
                      **pair(part, "0.19.4", "0.19.5"), **pair(part, "candidates", "0.19.5")})
    return pd.DataFrame(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the study's rows")
    parser.add_argument("--data-dir")
    args = parser.parse_args(argv)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(table(per_series(args.output, data_folder(args.data_dir))).to_string(index=False, float_format="%.3f"))


if __name__ == "__main__":
    main()
