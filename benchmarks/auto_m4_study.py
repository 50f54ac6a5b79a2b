"""AutoForecaster's rules on M4 Weekly or Hourly with every default candidate, neural ones included.

    nohup nice python benchmarks/auto_m4_study.py --frequency Weekly --models RSA,DLinear,SeasonalNaive,Theta &
    nohup nice python benchmarks/auto_m4_study.py --frequency Weekly --models Transformer,ETS,ARIMA &
    python benchmarks/auto_m4_study.py --summary --frequency Weekly
    nohup nice python benchmarks/auto_m4_study.py --frequency Weekly --models RSA,Transformer --set input_size=52 &
    python benchmarks/auto_m4_study.py --summary --frequency Weekly --use "RSA[input_size=52]"
    nohup nice python benchmarks/auto_m4_study.py --frequency Weekly --models RSA,Transformer,DLinear --dated &

The M3 study (``auto_m3_study.py``) fits each subset's sample of series; here every candidate of
AutoForecaster's default set (``tsrsa.forecasters.auto_candidates.default_candidates``: seasonal naive, ETS,
ARIMA, Theta, RSA, its twin, DLinear, configured as an ``AutoForecaster(h, season_length=m, freq=1,
random_state=seed)`` configures them) makes, on the frequency's whole panel, the fits that AutoForecaster at
those arguments makes when ``benchmarks/m4.py --models Auto`` fits it on the validation histories (each
training series without its last h values):

- ``inner`` = ``cross_validate(val, n_windows=2, refit=False)``: fitted once on ``val`` without its last
  ``2 h`` values, the two windows after it forecast (AutoForecaster's validation);
- ``later`` = ``fit(val).predict()``: the last h values of each training series (a later block than the
  one chosen on; AutoForecaster's refit and its forecast, scored as m4.py's ``validation`` row);
- ``test`` = the same fit's ``predict(df=train)``: the official test, as m4.py's ``test`` row.

Each on the series AutoForecaster gives it: validated on those of at least its ``required_length`` plus the
block, refitted on those of at least its ``required_length``.

So a rule (``auto_m3_rules.RULES``) is applied offline with AutoForecaster's own arithmetic (``choice_weights``,
``within_noise``, ``combined``) and scored exactly as an Auto run at that rule would be (a neural candidate's refit does
not depend on which series keep it; a statistical one's is per series). One row per (candidate, series)
with the three forecasts, the candidate's seconds for its validation and its refit (the whole panel's), and
any refusal, appended as each candidate finishes. ``--summary`` prints each rule's sMAPE, MASE and OWA on the
later block and the test, each candidate alone, and the rule's fit seconds (the validation of every
candidate plus the refits of the kept ones: a network's whole refit, a statistical candidate's in proportion
to the series that keep it) over the most expensive candidate's refit. ``--set KEY=JSON`` runs
candidates with a parameter changed (rows named ``RSA[input_size=52]``); ``--use`` puts such a candidate in
place of the default of its name in the summary.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from auto_m3_rules import RULES, SeriesList, median_of_kept, rule_weights

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "auto_m4_study.csv"
NAMES = ("SeasonalNaive", "ETS", "ARIMA", "Theta", "RSA", "Transformer", "DLinear")
COLUMNS = ("date", "tsrsa_version", "frequency", "seed", "model", "unique_id", "inner_forecast", "later_forecast",
           "test_forecast", "validation_seconds", "refit_seconds", "error")


def candidates(h: int, m: int, seed: int) -> dict:
    """name -> the default candidate as ``AutoForecaster(h, season_length=m, freq=1, random_state=seed)`` builds it."""
    import tsrsa
    from tsrsa.forecasters.auto_candidates import default_candidates

    auto = tsrsa.AutoForecaster(h=h, season_length=m, freq=1, random_state=seed)
    return dict(default_candidates(auto, {"id_col": "unique_id", "time_col": "ds", "target_col": "y"}))


def by_series(frame: pd.DataFrame, ids, h: int, windows: int) -> dict:
    """{id: list of the first windows * h forecasts} from a long forecast frame (ordered by cutoff and ds)."""
    keys = [c for c in ("unique_id", "cutoff", "ds") if c in frame.columns]
    ordered = frame.sort_values(keys, kind="stable")
    out = {}
    for sid, group in ordered.groupby("unique_id", sort=False):
        values = group["yhat"].to_numpy(dtype=np.float64)[: windows * h]
        if len(values) == windows * h and np.isfinite(values).all():
            out[sid] = [float(f"{v:.8g}") for v in values]
    return {sid: out.get(sid) for sid in ids}


def long_enough(model, split, panel, block: int) -> tuple[list, list]:
    """The ids of ``split`` (whose ``panel`` is given) long enough for ``model`` to be validated on (its
    ``required_length`` plus the validation ``block``) and to be refitted on (its ``required_length``), as
    AutoForecaster decides them."""
    probe = model.clone()
    probe.check_params()
    need, _ = probe.required_length(panel)
    lengths = {sid: len(values) for sid, values in split.history.items()}
    return [s for s in split.ids if lengths[s] >= need + block], [s for s in split.ids if lengths[s] >= need]


def of(frame: pd.DataFrame, ids) -> pd.DataFrame:
    """The rows of ``frame`` whose series are ``ids`` (the frame itself when that is all of them)."""
    keep = frame["unique_id"].isin(set(ids))
    return frame if keep.all() else frame[keep]


def labelled(name: str, params: dict) -> str:
    """A candidate's name in the rows: ``RSA``, or with changed parameters ``RSA[input_size=52]``."""
    return name + ("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(params.items())) + "]" if params else "")


#: ``--dated``: each series' integer steps as dates of the frequency from this origin (M4 gives none)
DATED = {"Weekly": ("1990-01-07", "7D"), "Hourly": ("2000-01-01", "1h")}


def dated(frame: pd.DataFrame, frequency: str) -> pd.DataFrame:
    """``frame`` with its integer ``ds`` as dates (:data:`DATED`): what a user whose data have dates fits."""
    origin, step = DATED[frequency]
    return frame.assign(ds=pd.Timestamp(origin) + frame["ds"].to_numpy() * pd.Timedelta(step))


def run(frequency: str, models, seed: int, output: Path, data_dir=None, params: dict | None = None,
        with_dates: bool = False) -> None:
    """The three fits of every candidate of ``models`` on the panel (with ``params`` set on each, its rows
    named by :func:`labelled`; ``with_dates``: the frames dated, the frequency inferred, rows named
    ``RSA[dated=true]``); rows appended per candidate."""
    import torch

    import tsrsa
    from tsrsa.benchmarking.m4 import load_split
    from tsrsa.benchmarking.results import append_rows
    from tsrsa.forecasters.auto_candidates import held_look_back

    torch.set_num_threads(1)
    val, test = load_split(frequency, "validation", data_dir), load_split(frequency, "test", data_dir)
    h, m = val.frequency.h, val.frequency.m
    built = candidates(h, m, seed)
    val_frame, test_frame = val.frame(), test.frame()  # built once, read by every candidate
    params, label = params or {}, dict(params or {})
    if with_dates:
        val_frame, test_frame = dated(val_frame, frequency), dated(test_frame, frequency)
        params, label = {**params, "freq": None}, {**label, "dated": True}
    for name in models:
        model, error = built[name].set_params(**params) if params else built[name], ""
        panel = model.to_panel(val_frame)
        model = held_look_back(model, panel, 2 * h)  # as AutoForecaster's fit sets it
        inner = later = future = {}
        valid, able = long_enough(model, val, panel, 2 * h)  # the series AutoForecaster validates it on, and refits
        began = time.perf_counter()
        try:
            inner = by_series(model.clone().cross_validate(of(val_frame, valid), n_windows=2, step_size=h,
                                                       refit=False), val.ids, h, 2)
        except Exception as err:  # noqa: BLE001 - a refusal is a result: AutoForecaster skips the candidate
            error = f"inner: {type(err).__name__}: {err}"[:300]
        validation_seconds = time.perf_counter() - began
        began = time.perf_counter()
        try:
            fitted = model.clone().fit(of(val_frame, able))
            refit_seconds = time.perf_counter() - began
            later = by_series(fitted.predict(), val.ids, h, 1)
            future = by_series(fitted.predict(df=of(test_frame, able)), val.ids, h, 1)
        except Exception as err:  # noqa: BLE001
            refit_seconds = time.perf_counter() - began
            error = (error + " | " if error else "") + f"refit: {type(err).__name__}: {err}"[:300]
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows = [{"date": stamp, "tsrsa_version": tsrsa.__version__, "frequency": frequency, "seed": seed,
                 "model": labelled(name, label), "unique_id": sid, "inner_forecast": json.dumps(inner.get(sid)) if inner.get(sid) else "",
                 "later_forecast": json.dumps(later.get(sid)) if later.get(sid) else "",
                 "test_forecast": json.dumps(future.get(sid)) if future.get(sid) else "",
                 "validation_seconds": round(validation_seconds, 2), "refit_seconds": round(refit_seconds, 2),
                 "error": error} for sid in val.ids]
        append_rows(output, rows, COLUMNS)
        print(f"{frequency} {labelled(name, label)}: validation {validation_seconds:.1f} s, refit {refit_seconds:.1f} s {error}",
              flush=True)


COST_OUTPUT = HERE / "results" / "auto_m4_cost.csv"


def cost(frequency: str, n_series: int, models, seed: int, data_dir=None, with_dates: bool = False,
         output: Path = COST_OUTPUT) -> None:
    """AutoForecaster's fit among ``models`` (every default candidate: its defaults) against each candidate's fit
    alone (:mod:`auto_cost`), on the validation histories of the frequency's first ``n_series`` series as one
    panel (``with_dates``: dated, as ``--dated``); the Auto row's ``params`` names the candidates and the dates."""
    import torch

    import tsrsa
    from auto_cost import time_fits
    from tsrsa.benchmarking.m4 import load_split

    torch.set_num_threads(1)
    val = load_split(frequency, "validation", data_dir)
    h, m = val.frequency.h, val.frequency.m
    frame = of(val.frame(), val.ids[:n_series])
    freq = 1
    if with_dates:
        frame, freq = dated(frame, frequency), None
    chosen = None
    if list(models) != list(NAMES):
        built = candidates(h, m, seed)
        chosen = [(name, built[name].set_params(freq=None) if with_dates else built[name]) for name in models]
    auto = tsrsa.AutoForecaster(h=h, season_length=m, freq=freq, random_state=seed, models=chosen)
    described = json.dumps({"candidates": "defaults" if chosen is None else ",".join(models), "dated": with_dates})
    time_fits(auto, frame, output, seed=seed, subset=frequency, described=described)


# ---------------------------------------------------------------------- the rules, offline
def arrays(frequency: str, seed: int, output: Path, data_dir=None, use=(), without=()):
    """The splits, and (S, C, 2, h) inner, (S, C, h) later and test forecasts (NaN where missing), and the
    candidates' (C,) validation and refit seconds, from each candidate's latest rows; ``use``: labelled
    candidates (``RSA[input_size=52]``) that stand in for the default of their name; ``without``: candidates left
    out."""
    from tsrsa.benchmarking.m4 import load_split

    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    rows = rows[(rows["frequency"] == frequency) & (rows["seed"] == seed)]
    for label in use:
        base = label.split("[")[0]
        if label not in set(rows["model"]):
            raise ValueError(f"no rows of {label!r} for {frequency}, seed {seed}: run it first (--set)")
        rows = rows[rows["model"] != base]
        rows.loc[rows["model"] == label, "model"] = base
    rows = rows[rows["model"].isin(NAMES) & ~rows["model"].isin(without)]
    rows = rows.drop_duplicates(["model", "unique_id"], keep="last")
    val, test = load_split(frequency, "validation", data_dir), load_split(frequency, "test", data_dir)
    ids, h = val.ids, val.frequency.h
    where = {sid: i for i, sid in enumerate(ids)}
    S, C = len(ids), len(NAMES)
    inner, later, future = np.full((S, C, 2, h), np.nan), np.full((S, C, h), np.nan), np.full((S, C, h), np.nan)
    seconds = np.zeros((2, C))
    for row in rows.itertuples(index=False):
        i, c = where[row.unique_id], NAMES.index(row.model)
        for target, text, shape in ((inner, row.inner_forecast, (2, h)), (later, row.later_forecast, (h,)),
                                    (future, row.test_forecast, (h,))):
            if text:
                target[i, c] = np.array(json.loads(text)).reshape(shape)
        seconds[:, c] = float(row.validation_seconds), float(row.refit_seconds)
    present = [name for name in NAMES if name in set(rows["model"])]
    return val, test, inner, later, future, seconds, present


def inner_targets(val):
    """(the inner windows' values (S, 2, h), each series' MASE scale (S,)) of the validation split ``val``."""
    from tsrsa.estimator.model_choice import naive_scale

    h, m = val.frequency.h, val.frequency.m
    histories = [val.history[sid] for sid in val.ids]
    ends = np.array([max(len(v) - 2 * h, 1) for v in histories])  # values before AutoForecaster's block
    y = np.stack([np.stack([v[e + w * h: e + (w + 1) * h] for w in range(2)]) for v, e in zip(histories, ends)])
    return y, naive_scale(SeriesList(histories), ends, m)


def look_back_choice(frequency: str, seed: int, output: Path, data_dir=None, use=(), longer=()):
    """(``use`` with the networks' rows at twice their look-back (``longer``, such as ``RSA[input_size=52]``) in
    place of their defaults where DLinear's (the scout, which ``longer`` must name) have the lower mean inner MASE
    over the series both validated, as AutoForecaster's fit chooses; the seconds of the scout's validation not
    kept; one line saying the choice)."""
    from tsrsa.estimator.model_choice import scaled_errors

    use = list(use)
    if not longer:
        return use, 0.0, []
    scout = next((label for label in longer if label.split("[")[0] == "DLinear"), None)
    if scout is None:
        raise ValueError(f"--longer {list(longer)} names no DLinear rows: DLinear chooses the look-back for all")
    c = NAMES.index("DLinear")
    shown = [u for u in use if u.split("[")[0] == "DLinear"]
    val, _, base, _, _, base_seconds, _ = arrays(frequency, seed, output, data_dir, use)
    _, _, other, _, _, other_seconds, _ = arrays(frequency, seed, output, data_dir,
                                                 [u for u in use if u not in shown] + [scout])
    y, scale = inner_targets(val)
    errors = scaled_errors(np.stack([base[:, c], other[:, c]], axis=1), y, scale)  # (S, 2)
    both = np.isfinite(errors).all(axis=1)
    mase = errors[both].mean(axis=0)
    keep = bool(mase[1] < mase[0])
    if keep:
        names = {label.split("[")[0] for label in longer}
        use = [u for u in use if u.split("[")[0] not in names] + list(longer)
    extra = float((base_seconds if keep else other_seconds)[0, c])
    line = (f"DLinear: inner MASE {mase[0]:.4f} ({shown[0] if shown else 'DLinear'}) against {mase[1]:.4f} "
            f"({scout}) on {int(both.sum())} series: "
            f"{'the longer look-back for ' + ', '.join(longer) if keep else 'the defaults'}")
    return use, extra, [line]


def rule_scores(frequency: str, seed: int, output: Path, data_dir=None, use=(), without=(), longer=(),
                median: bool = False) -> pd.DataFrame:
    """One line per rule (``auto_m3_rules.RULES``) and candidate alone: sMAPE, MASE and OWA on the later block
    and the test, the share of series keeping each candidate, and the fit seconds over the costliest refit
    (``without``: candidates left out of the choice; ``longer``: :func:`look_back_choice`, whose validations not
    kept are charged to every rule and whose line is the table's ``attrs["look_back"]``; ``median``: a rule's kept
    candidates combined by ``auto_m3_rules.median_of_kept``)."""
    from tsrsa.benchmarking.m4 import scores_with_owa
    from tsrsa.estimator.model_choice import combined, scaled_errors
    from tsrsa.forecasters.auto_candidates import local

    use, extra, look_back = look_back_choice(frequency, seed, output, data_dir, use, longer)
    val, test, inner, later, future, seconds, present = arrays(frequency, seed, output, data_dir, use, without)
    h, m = val.frequency.h, val.frequency.m
    use = [NAMES.index(name) for name in present]
    inner, later, future, seconds = inner[:, use], later[:, use], future[:, use], seconds[:, use]
    y, scale = inner_targets(val)
    errors = scaled_errors(inner, y, scale)
    signed = (inner - y[:, None]) / scale[:, None, None, None]
    inner_abs = np.abs(signed)
    blocked = ~np.isfinite(later).all(axis=2)
    most = float(seconds[1].max())
    built = candidates(h, m, seed)
    per_series = np.array([local(built[name]) for name in present])  # refitted on the series that keep them only
    out = []

    def line(name, weights):
        row = {"frequency": frequency, "seed": seed, "model": name}
        for origin, split, scored in (("later", val, later), ("test", test, future)):
            score = scores_with_owa(split, (median_of_kept if median else combined)(weights, scored))
            row.update({f"{origin}_{k}": v for k, v in score.items()})
        used = weights > 0
        cost = extra + float(seconds[0].sum() + (seconds[1] * np.where(per_series, used.mean(axis=0),
                                                                         used.any(axis=0))).sum())
        row.update({"kept": " ".join(f"{n}={s:.2f}" for n, s in zip(present, used.mean(axis=0)) if s > 0),
                    "seconds": cost, "cost_ratio": cost / most})
        return row

    ids = np.array(val.ids, dtype=object)
    for rule in RULES:
        out.append(line(rule, rule_weights(errors, ids, present, rule, blocked, inner_abs, signed)))
    for c, name in enumerate(present):
        if blocked[:, c].any() or not np.isfinite(future[:, c]).all():  # alone it does not forecast every series
            out.append({"frequency": frequency, "seed": seed, "model": name,
                        "kept": f"forecasts {int((~blocked[:, c]).sum())} of {len(ids)} series"})
            continue
        weights = np.zeros((len(ids), len(present)))
        weights[:, c] = 1.0
        row = line(name, weights)
        row["seconds"], row["cost_ratio"], row["kept"] = float(seconds[1, c]), float(seconds[1, c]) / most, ""
        out.append(row)
    table = pd.DataFrame(out)
    table.attrs["look_back"] = look_back
    return table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frequency", default="Weekly", choices=("Weekly", "Hourly"))
    parser.add_argument("--models", default=",".join(NAMES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--data-dir", help="the folder holding m4/ (default: TSRSA_DATA_DIR, else ../shared/datasets)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                        help="a parameter set on every candidate of this run (its rows are named RSA[KEY=VALUE])")
    parser.add_argument("--dated", action="store_true",
                        help="the series' steps as dates (weekly, hourly): the frequency's season is known")
    parser.add_argument("--cost", type=int, metavar="N",
                        help="time AutoForecaster's fit among --models (all: its defaults) against each candidate's "
                             "on the first N series' validation histories, one panel (with --dated: dated), and "
                             "append the rows to results/auto_m4_cost.csv")
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--use", action="append", default=[], metavar="LABEL",
                        help="--summary with a labelled candidate (RSA[input_size=52]) in place of its default")
    parser.add_argument("--longer", action="append", default=[], metavar="LABEL",
                        help="--summary with a network's rows at twice its look-back (RSA[input_size=52]), kept in "
                             "place of its default where DLinear's validate better, as AutoForecaster chooses")
    args = parser.parse_args(argv)
    args.data_dir = args.data_dir or os.environ.get("TSRSA_DATA_DIR") or HERE.parent.parent / "shared" / "datasets"
    if args.summary:
        table = rule_scores(args.frequency, args.seed, args.output, args.data_dir, args.use, longer=args.longer)
        for line in table.attrs["look_back"]:
            print(line)
        with pd.option_context("display.width", 250, "display.max_rows", 200):
            print(table.to_string(index=False, float_format="%.4f"))
        return
    models = [name.strip() for name in args.models.split(",")]
    if set(models) - set(NAMES):
        parser.error(f"unknown models {sorted(set(models) - set(NAMES))}; choose from {', '.join(NAMES)}")
    if args.cost:
        cost(args.frequency, args.cost, models, args.seed, args.data_dir, args.dated)
        return
    params = {key: json.loads(value) for key, _, value in (p.partition("=") for p in args.set)}
    run(args.frequency, models, args.seed, args.output, args.data_dir, params, args.dated)


if __name__ == "__main__":
    main()
