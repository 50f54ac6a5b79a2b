"""AutoForecaster's validation windows on M3: two back-to-back windows (the default) against every cutoff of the
same block (step 1), scored on the M3 study's later block.

    nohup nice python benchmarks/auto_m3_windows.py --subsets quarterly,yearly,other &
    nohup nice python benchmarks/auto_m3_windows.py --subsets quarterly,yearly,other --models RSA,Transformer,DLinear &
    python benchmarks/auto_m3_windows.py --summary

At the M3 study's later origin (``auto_m3_study.py``: each series without its test part and the ``h`` values before
it, ``fit1``) AutoForecaster validates on the last ``2 h`` values of ``fit1``: two windows of ``h`` steps, cutoffs
``h`` apart. The same fit (each candidate fitted once without that block, ``refit=False``) forecasts from every
cutoff of the block with ``step_size=1``: ``h + 1`` windows, the default's two among them, at no further fit. Each
row holds a candidate's forecasts from those ``h + 1`` cutoffs (statistical candidates per series; the networks
once per subset on the panel of all its series, as the study fits them, through AutoForecaster's own
``validate_candidates``). ``--summary`` applies the rules (``auto_m3_rules.RULES``) with AutoForecaster's arithmetic
to both window sets, scores each on the later block with the study's refits (its ``cv1`` forecasts), and prints the
candidates' mean validation MASE (the two windows) beside their later-block MASE, on the series every candidate
validated.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from auto_m3_data import (CANDIDATES, HERE, HORIZON, NETWORKS, OUTPUT, SEASON, SEED, data_folder, draw, load_forecast,
                          read_values)
from auto_m3_rules import RULES, SeriesList, latest_rows, rule_weights
from auto_m3_study import long_frame
from auto_m4_study import candidates

ROWS = HERE / "results" / "auto_m3_windows.csv"
COLUMNS = ("date", "tsrsa_version", "subset", "unique_id", "model", "forecast", "seconds", "error")


def rounded(yhat: np.ndarray) -> str:
    return json.dumps([float(f"{v:.8g}") for v in np.ravel(yhat)])


def statistical_rows(sid: str, values: np.ndarray, subset: str, models) -> list[dict]:
    """One row per statistical candidate of ``models``: its forecasts from the h + 1 cutoffs of fit1's last 2h."""
    import tsrsa

    h, m = HORIZON[subset], SEASON[subset]
    fit1 = pd.Series(values[:-2 * h], index=pd.RangeIndex(len(values) - 2 * h), name=sid)
    rows = []
    for name in models:
        model = getattr(tsrsa, CANDIDATES[name])(h=h, season_length=m)
        began = time.perf_counter()
        try:
            yhat = model.cross_validate(fit1, n_windows=h + 1, step_size=1, refit=False)["yhat"].to_numpy()
            forecast, error = (rounded(yhat), "") if np.isfinite(yhat).all() else ("", "non-finite forecast")
        except Exception as err:  # noqa: BLE001 - a refusal is a result: AutoForecaster skips the candidate there
            forecast, error = "", f"{type(err).__name__}: {err}"[:200]
        rows.append({"unique_id": sid, "model": name, "forecast": forecast,
                     "seconds": round(time.perf_counter() - began, 4), "error": error})
    return rows


def network_rows(name: str, subset: str, ids, values: dict) -> list[dict]:
    """One row per series of ``ids``: the network's forecasts from the h + 1 cutoffs, at the look-back AutoForecaster
    holds for the panel and chooses on its two windows (DLinear choosing it on integer time, as in the study's
    rows), then fitted once more to forecast from every cutoff; the seconds of that fit shared equally."""
    from tsrsa.estimator.choice_record import ChoiceRecord, required_length
    from tsrsa.estimator.model_choice import naive_scale, validation_targets
    from tsrsa.forecasters.auto_candidates import held_look_back, longer_look_backs, validate_candidates

    h, m = HORIZON[subset], SEASON[subset]
    built = candidates(h, m, 0)  # as AutoForecaster(h, season_length=m, freq=1, random_state=0) builds them
    frame = long_frame(values, ids, 2 * h)
    panel = built[name].to_panel(frame)
    given = [(name, built[name])] + ([] if name == "DLinear" else [("DLinear", built["DLinear"])])
    named = [(n, held_look_back(model, panel, 2 * h)) for n, model in given]
    ends = np.maximum(panel.lengths - 2 * h, 1)
    scale = naive_scale(panel, ends, m)

    def validate(named, longer, W, step):
        record = ChoiceRecord(panel.ids, [n for n, _ in named], "unique_id")
        named, _, yhat, _ = validate_candidates(
            named, [required_length(model, frame) for _, model in named], longer, panel, frame, record, windows=W,
            step=step, h=h, y=validation_targets(panel, ends, W, step, h), scale=scale, id_col="unique_id")
        return named, yhat, {sid: error for sid, candidate, _, error in record.rows if candidate == name}

    named, _, _ = validate(named, longer_look_backs(given, named, panel, frame, 2 * h), 2, h)  # the study's
    began = time.perf_counter()
    _, yhat, why = validate(named[:1], [None], h + 1, 1)
    seconds = round((time.perf_counter() - began) / len(ids), 4)
    return [{"unique_id": sid, "model": name, "forecast": rounded(yhat[i, 0]) if np.isfinite(yhat[i, 0]).all() else "",
             "seconds": seconds, "error": str(why.get(sid, ""))[:200]} for i, sid in enumerate(panel.ids)]


def run(subsets, models, data: Path, output: Path) -> None:
    """Fit ``models`` on every series of ``subsets``, skipping a (series, model) this release has written."""
    from tsrsa import __version__
    from tsrsa.benchmarking.results import append_rows

    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    sample = draw(info, subsets, 100_000, SEED)  # every series, in the study's order
    values = read_values(data, sample)
    done = set()
    if output.exists():
        old = pd.read_csv(output, dtype={"unique_id": str})
        done = set(zip(old["unique_id"], old["model"], old["tsrsa_version"]))
    stamp = {"tsrsa_version": __version__}

    def write(subset, rows):
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        append_rows(output, [{"date": now, **stamp, "subset": subset, **row} for row in rows], COLUMNS)

    local = [name for name in models if name not in NETWORKS]
    for _, row in sample.iterrows():
        todo = [name for name in local if (row["unique_id"], name, __version__) not in done]
        if todo:
            write(row["subset"], statistical_rows(row["unique_id"], values[row["unique_id"]], row["subset"], todo))
    for subset, part in sample.groupby("subset", sort=False):
        ids = list(part["unique_id"])
        for name in [n for n in models if n in NETWORKS]:
            if not all((sid, name, __version__) in done for sid in ids):
                write(subset, network_rows(name, subset, ids, values))
                print(subset, name, flush=True)


def summary(output: Path, study: Path, data: Path) -> pd.DataFrame:
    """Per subset: each rule's later-block MASE and sMAPE with the two windows and with every cutoff; each candidate's
    mean validation MASE over the two windows and its later-block MASE alone."""
    from tsrsa.benchmarking.m3_sample import mase, smape
    from tsrsa.estimator.model_choice import combined, naive_scale, scaled_errors

    rows = latest_rows(pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False).assign(seed=SEED))
    refits = latest_rows(pd.read_csv(study, dtype={"unique_id": str}, keep_default_na=False))
    out = []
    for subset, group in rows.groupby("subset"):
        h, m = HORIZON[subset], SEASON[subset]
        names = [n for n in (*CANDIDATES, *NETWORKS) if n in set(group["model"])]
        ids = sorted(set(group["unique_id"]))
        values = read_values(data, pd.DataFrame({"unique_id": ids, "subset": subset}))
        at = {sid: i for i, sid in enumerate(ids)}
        dense, scored = np.full((len(ids), len(names), h + 1, h), np.nan), np.full((len(ids), len(names), h), np.nan)
        for sid, name, text in group[["unique_id", "model", "forecast"]].itertuples(index=False):
            if (yhat := load_forecast(text)) is not None:
                dense[at[sid], names.index(name)] = yhat.reshape(h + 1, h)
        mine = refits[(refits["subset"] == subset) & refits["unique_id"].isin(at) & refits["model"].isin(names)]
        for sid, name, text in mine[["unique_id", "model", "cv1_forecast"]].itertuples(index=False):
            if (yhat := load_forecast(text)) is not None:
                scored[at[sid], names.index(name)] = yhat
        frame = [values[sid][: len(values[sid]) - 2 * h] for sid in ids]
        targets = np.stack([values[sid][len(f): len(f) + h] for sid, f in zip(ids, frame)])
        ends = np.array([max(len(f) - 2 * h, 1) for f in frame])
        scale = naive_scale(SeriesList(frame), ends, m)
        blocked = ~np.isfinite(scored).all(axis=2)
        validated = np.isfinite(dense).all(axis=(1, 2, 3))

        def score(yhat):
            ok = np.isfinite(yhat).all(axis=1)
            return (np.mean([mase(t, f, fr, m) for t, f, fr, k in zip(targets, yhat, frame, ok) if k]),
                    np.mean([smape(t, f) for t, f, k in zip(targets, yhat, ok) if k]), int(ok.sum()))

        for label, inner, step in (("two", dense[:, :, [0, h]], h), ("every cutoff", dense, 1)):
            W = inner.shape[2]
            y = np.stack([np.stack([f[e + w * step: e + w * step + h] for w in range(W)]) if e + 2 * h <= len(f)
                          else np.full((W, h), np.nan) for f, e in zip(frame, ends)])
            errors = scaled_errors(inner, y, scale)
            signed = (inner - y[:, None]) / scale[:, None, None, None]
            for rule in RULES:
                weights = rule_weights(errors, ids, names, rule, blocked, np.abs(signed), signed)
                out.append({"subset": subset, "windows": label, "model": rule,
                            **dict(zip(("mase", "smape", "series"), score(combined(weights, scored))))})
            if label == "two":
                naive = scored[:, names.index("SeasonalNaive")]  # where a candidate cannot forecast a series
                for c, name in enumerate(names):
                    alone = np.where(np.isfinite(scored[:, c]).all(axis=1)[:, None], scored[:, c], naive)
                    out.append({"subset": subset, "windows": "alone", "model": name,
                                **dict(zip(("mase", "smape", "series"), score(alone))),
                                "validation_mase": float(np.mean(errors[validated, c]))})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", default="quarterly,yearly,other")
    parser.add_argument("--models", default=",".join(CANDIDATES))
    parser.add_argument("--output", type=Path, default=ROWS)
    parser.add_argument("--study", type=Path, default=OUTPUT, help="the M3 study's rows (the later block's refits)")
    parser.add_argument("--data-dir")
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args(argv)
    data = data_folder(args.data_dir)
    if args.summary:
        table = summary(args.output, args.study, data)
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            print(table.to_string(index=False, float_format="%.3f"))
        return
    subsets = [s.strip() for s in args.subsets.split(",")]
    models = [s.strip() for s in args.models.split(",")]
    unknown = sorted(set(subsets) - set(HORIZON)) + sorted(set(models) - {*CANDIDATES, *NETWORKS})
    if unknown:
        parser.error(f"unknown subsets or models {unknown}")
    run(subsets, models, data, args.output)


if __name__ == "__main__":
    main()
