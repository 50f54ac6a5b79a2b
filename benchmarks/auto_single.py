"""AutoForecaster on one series alone: the validation windows of a short series, from the M3 study's rows.

    python benchmarks/auto_single.py

A user fitting one series fits a panel of one: no other series ranks the candidates for it. Each M3 series of
the study (``auto_m3_study.py``'s rows: SeasonalNaive, ETS, ARIMA and Theta, fitted on that series alone) is
scored as such a panel with AutoForecaster's own arithmetic (``choice_weights``, the default rule), at both of
the study's origins: ``later`` (fitted on the training part less h, scored on the training part's last h values)
and ``test`` (fitted on the training part, scored on the test part; read for no choice). Three rules:

- ``two windows`` (until 0.19.4): always ``n_windows=2``; a series that holds the validation of one candidate
  keeps it, one that holds none is refused (ValueError);
- ``fewer windows``: two windows where they validate two candidates, else one (and as above on it);
- ``0.19.5``: fewer windows, and where even one window validates fewer than two candidates, the mean of the
  candidates that fit the series (``basis`` "unranked").

Only the series where the rules differ (two windows validate fewer than two candidates) are listed.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from auto_m3_data import CANDIDATES, HORIZON, OUTPUT, SEASON, data_folder, read_values
from auto_m3_rules import SeriesList, latest_rows, panel_arrays


#: the rules compared (module docstring)
RULES = ("two windows", "fewer windows", "0.19.5")


def weights_of(inner: np.ndarray, targets: np.ndarray, before: np.ndarray, m: int, names) -> np.ndarray | None:
    """(C,) the default rule's weights for one series from its inner forecasts (C, W, h) of ``targets`` (W, h),
    ``before`` the values before the block; None where no candidate was validated."""
    from tsrsa.estimator.model_choice import choice_weights, naive_scale, scaled_errors

    scale = naive_scale(SeriesList([before]), np.array([len(before)]), m)
    errors = scaled_errors(inner[None], targets[None], scale)  # (1, C)
    if not np.isfinite(errors).any():
        return None
    steps = np.abs(inner[None] - targets[None, None]) / scale[:, None, None, None]
    return choice_weights(errors, ["series"], names, combine="mean", top_k=None, margin=2.0, step_errors=steps)[0]


def validated(inner: np.ndarray) -> int:
    """How many candidates forecast every window of ``inner`` (C, W, h)."""
    return int(np.isfinite(inner.reshape(len(inner), -1)).all(axis=1).sum())


def one_series(values: np.ndarray, h: int, m: int, arrays: dict, i: int, names) -> list[dict]:
    """Per origin: the series' score under each rule (NaN where refused) and how many candidates each validated."""
    from tsrsa.benchmarking.m3_sample import mase, smape

    train, test = values[:-h], values[-h:]
    out = []
    origins = (("later", train[:-h], arrays["cv2_fit1"][i], arrays["cv2"][i][:, :1], arrays["cv1"][i], train[-h:]),
               ("test", train, arrays["cv2"][i], arrays["cv1"][i][:, None], arrays["final"][i], test))
    for origin, history, two, one, scored, target in origins:
        row = {"origin": origin, "two_validated": validated(two), "one_validated": validated(one)}
        fewer = two if row["two_validated"] >= 2 else one
        rules = {"two windows": two, "fewer windows": fewer, "0.19.5": fewer}
        for rule, inner in rules.items():
            W = inner.shape[1]
            weights = None
            if rule == "0.19.5" and row["two_validated"] < 2 and row["one_validated"] < 2:  # unranked
                fits = np.isfinite(scored).all(axis=1)  # every candidate here is statistical
                weights = fits / fits.sum() if fits.any() else None
            elif len(history) > W * h:  # else no candidate could be validated
                targets = history[len(history) - W * h:].reshape(W, h)
                weights = weights_of(inner, targets, history[: len(history) - W * h], m, names)
            if weights is None:
                row[f"{rule} sMAPE"] = row[f"{rule} MASE"] = np.nan
                continue
            forecast = (weights[:, None] * np.nan_to_num(scored)).sum(axis=0)
            row[f"{rule} sMAPE"], row[f"{rule} MASE"] = smape(target, forecast), mase(target, forecast, history, m)
            row[f"{rule} kept"] = "+".join(name for name, w in zip(names, weights) if w > 0)
        out.append(row)
    return out


def per_series(output: Path, data: Path) -> pd.DataFrame:
    """One line per (series, origin) of the study's rows: each rule's score (:func:`one_series`)."""
    names = list(CANDIDATES)
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    rows = latest_rows(rows[rows["model"].isin(names)])
    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    per = []
    for subset, group in rows.groupby("subset", sort=False):
        h, m = HORIZON[subset], SEASON[subset]
        ids, arrays, _ = panel_arrays(group, names, None, h)
        values = read_values(data, info[info["unique_id"].isin(ids)].assign(draw=0))
        for i, sid in enumerate(ids):
            per += [{"subset": subset, "unique_id": sid, **row} for row in one_series(values[sid], h, m, arrays, i,
                                                                                     names)]
    return pd.DataFrame(per)


def pair(part: pd.DataFrame, first: str, second: str) -> dict:
    """The series both rules forecast and each one's mean scores there."""
    both = part.dropna(subset=[f"{first} sMAPE", f"{second} sMAPE"])
    return {f"{first} & {second} forecast": len(both), **{f"{rule} {metric} there": both[f"{rule} {metric}"].mean()
                                                          for rule in (first, second) for metric in ("sMAPE", "MASE")}}


def table(per: pd.DataFrame) -> pd.DataFrame:
    """Per subset and origin, the series where the rules differ: refusals and mean scores."""
    lines = []
    for (subset, origin), part in per[per["two_validated"] < 2].groupby(["subset", "origin"], sort=False):
        both = part.dropna(subset=[f"{rule} sMAPE" for rule in RULES])
        lines.append({"subset": subset, "origin": origin, "series": len(part),
                      **{f"refused, {rule}": int(part[f"{rule} sMAPE"].isna().sum()) for rule in RULES},
                      "all forecast": len(both),
                      **{f"{rule} {metric}": both[f"{rule} {metric}"].mean() for rule in RULES
                         for metric in ("sMAPE", "MASE")},
                      **pair(part, "fewer windows", "0.19.5")})
    return pd.DataFrame(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the study's rows")
    parser.add_argument("--data-dir")
    args = parser.parse_args(argv)
    with pd.option_context("display.width", 250):
        print(table(per_series(args.output, data_folder(args.data_dir))).to_string(index=False, float_format="%.3f"))


if __name__ == "__main__":
    main()
