"""AutoForecaster's combination rules on M3's four subsets: chosen on inner windows, scored on a later block.

    nohup nice python benchmarks/auto_m3_study.py --subsets monthly --per-subset 100 &
    nohup nice python benchmarks/auto_m3_study.py --subsets quarterly,yearly,other --per-subset 100 &
    python benchmarks/auto_m3_study.py --summary --first 100
    python benchmarks/auto_m3_study.py --summary --models SeasonalNaive,ETS,ARIMA,Theta,RSA,Transformer,DLinear
    nohup nice python benchmarks/auto_m3_study.py --cost 174 --subsets other &
    nohup nice python benchmarks/auto_m3_study.py --subsets quarterly --per-subset 756 --models RSA &

The sample: ``--per-subset`` series of each M3 subset (yearly, quarterly, monthly, other), drawn with
``numpy.random.default_rng(--seed)`` from all of its series (short ones included: AutoForecaster has to
decide on them too); the seed and the draw are in every row. Each series is given as a ``pd.Series`` on
integer time with the subset's season (12 monthly, 4 quarterly, 1 yearly and other) and M3's horizon
``h`` (18, 8, 6, 8); its last ``h`` values are the test part, never read for a choice.

Each candidate (SeasonalNaive, ETS, ARIMA, Theta at their defaults with the season) is fitted four times
per series, each an ordinary public call on the training part ``train`` (the series without its test
part) or ``train`` without its last ``h`` values (``fit1``):

- ``cv2`` = ``cross_validate(train, n_windows=2, refit=False)``: fitted once on ``train`` without its last
  ``2 h`` values, the two blocks after it forecast by the filter;
- ``cv1`` = ``cross_validate(train, n_windows=1)``: fitted on ``fit1``, forecasts the last ``h`` of ``train``;
- ``final`` = ``fit(train).predict()``: the test forecast;
- ``cv2_fit1`` = ``cross_validate(fit1, n_windows=2, refit=False)``: fitted on ``fit1`` without its last
  ``2 h`` values.

These are exactly the fits AutoForecaster makes (``refit=False`` validation, then a refit on the whole
frame), so each rule is applied offline with AutoForecaster's own arithmetic (``choice_weights``,
``combined``) at two origins:

- ``later`` (the study's score): AutoForecaster fitted on ``fit1`` chooses on its inner windows (with
  ``n_windows=1``: ``cv2``'s first window; with 2: ``cv2_fit1``) and forecasts ``cv1``'s block, the last
  ``h`` values of ``train``: a later block than the one it chose on, inside the training part;
- ``test``: AutoForecaster fitted on ``train`` chooses on ``cv1`` (or ``cv2``) and forecasts the test part
  with ``final``. Reported, never read for a choice.

The default set's networks (``--models RSA,Transformer,DLinear``: RSA, its twin and DLinear as
``AutoForecaster(h, season_length=m, freq=1, random_state=0)`` builds them) are global: each makes the same four
fits once per subset, on the panel of the sample's series of that subset, as AutoForecaster makes them
(:func:`network_fits`): at the look-back :func:`~tsrsa.forecasters.auto_candidates.held_look_back` gives that
origin's panel, validated on the series long enough for it plus the block, refitted on those long enough for it;
a shorter series has no forecast from it (AutoForecaster leaves it to the other candidates). A network's seconds
are its panel fit's, shared equally among the subset's series; the rules count a kept network's refit whole.

One row per (series, candidate), with the four forecasts, their seconds and any refusal, is appended to
``--output`` as each series finishes (a stopped run resumes). ``--summary`` prints one table per subset:
each rule's mean MASE and sMAPE (M3's 200|y - yhat| / (|y| + |yhat|)) at both origins, every candidate alone
beside them (each where it cannot be fitted: the seasonal naive there, ``kept`` says on how many it was
fitted), and AutoForecaster's fit seconds (its validation fits plus the refits of what the series keep)
over the most expensive candidate's fit on ``train``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from auto_m3_data import (CANDIDATES, COLUMNS, FITS, HERE, HORIZON, NETWORKS, OUTPUT, SEASON, SEED, data_folder, draw,
                          read_values)
from auto_m3_rules import paired, release_table, summary
from auto_m4_study import by_series, candidates



def _forecast(call):
    """(forecast as a list, seconds, error message)."""
    began = time.perf_counter()
    try:
        yhat = call()["yhat"].to_numpy(dtype=np.float64)
        if not np.isfinite(yhat).all():
            raise FloatingPointError("non-finite forecast")
        return [float(f"{v:.8g}") for v in yhat], time.perf_counter() - began, ""
    except Exception as err:  # noqa: BLE001 - a refusal is a result: AutoForecaster skips the candidate there
        return None, time.perf_counter() - began, f"{type(err).__name__}: {err}"[:200]


def one_series(sid: str, values: np.ndarray, subset: str, models=tuple(CANDIDATES)) -> list[dict]:
    """One row per candidate of ``models``: the four fits of the module docstring."""
    import tsrsa

    h, m = HORIZON[subset], SEASON[subset]
    train = pd.Series(values[:-h], index=pd.RangeIndex(len(values) - h), name=sid)
    fit1 = train.iloc[:-h]
    rows = []
    for name in models:
        cls = CANDIDATES[name]
        model = getattr(tsrsa, cls)(h=h, season_length=m)
        calls = {"cv2": lambda: model.cross_validate(train, n_windows=2, step_size=h, refit=False),
                 "cv1": lambda: model.cross_validate(train, n_windows=1, step_size=h, refit=False),
                 "final": lambda: model.clone().fit(train).predict(),
                 "cv2_fit1": lambda: model.cross_validate(fit1, n_windows=2, step_size=h, refit=False)}
        row = {"model": name}
        errors = []
        for key, call in calls.items():
            yhat, seconds, error = _forecast(call)
            row[f"{key}_forecast"] = "" if yhat is None else json.dumps(yhat)
            row[f"{key}_seconds"] = round(seconds, 4)
            if error:
                errors.append(f"{key}: {error}")
        row["error"] = " | ".join(errors)
        rows.append(row)
    return rows


def long_frame(values: dict, ids, cut: int) -> pd.DataFrame:
    """The series ``ids`` of ``values`` without their last ``cut`` values: one long frame on integer time."""
    return pd.concat([pd.DataFrame({"unique_id": sid, "ds": np.arange(len(values[sid]) - cut),
                                    "y": values[sid][: len(values[sid]) - cut]}) for sid in ids], ignore_index=True)


def network_fits(name: str, subset: str, ids, values: dict) -> tuple[dict, dict, dict]:
    """The four fits of the network ``name`` on the panel of ``ids``, as AutoForecaster makes them: at the test
    origin (the training parts) its validation windows (``cv2``) and its refit's forecast (``final``), at the
    later origin (the training parts less h) the same (``cv2_fit1``, ``cv1``); each at the look-back
    ``held_look_back`` gives that origin's panel or, where more than half of the series hold twice it, the one of
    the two that DLinear validates better at (``validate_candidates``, AutoForecaster's own code; the validation
    seconds include DLinear's), validated on the series that hold its required length plus the two windows,
    refitted on those that hold the required length.
    Returns ({fit: {id: forecast}}, {fit: seconds of the panel}, {id: why a series has no forecast})."""
    from tsrsa.estimator.choice_record import ChoiceRecord, required_length
    from tsrsa.estimator.model_choice import naive_scale, validation_targets
    from tsrsa.forecasters.auto_candidates import held_look_back, longer_look_backs, validate_candidates

    h, m = HORIZON[subset], SEASON[subset]
    built = candidates(h, m, 0)  # as AutoForecaster(h, season_length=m, freq=1, random_state=0) builds them
    base, scout = built[name], built["DLinear"]
    forecasts, seconds, why = {}, {}, {}
    for (validation, refit), cut in ((("cv2", "final"), h), (("cv2_fit1", "cv1"), 2 * h)):
        frame = long_frame(values, ids, cut)
        panel = base.to_panel(frame)
        given = [(name, base)] + ([] if name == "DLinear" else [("DLinear", scout)])  # DLinear chooses the look-back
        named = [(n, held_look_back(model, panel, 2 * h)) for n, model in given]
        ends = np.maximum(panel.lengths - 2 * h, 1)
        record = ChoiceRecord(panel.ids, [n for n, _ in named], "unique_id")
        began = time.perf_counter()
        named, _, yhat, _ = validate_candidates(
            named, [required_length(model, frame) for _, model in named],
            longer_look_backs(given, named, panel, frame, 2 * h), panel, frame, record, windows=2, step=h, h=h,
            y=validation_targets(panel, ends, 2, h, h), scale=naive_scale(panel, ends, m), id_col="unique_id")
        seconds[validation] = time.perf_counter() - began
        forecasts[validation] = {sid: [float(f"{v:.8g}") for v in yhat[i, 0].ravel()]
                                 for i, sid in enumerate(panel.ids) if np.isfinite(yhat[i, 0]).all()}
        for sid, candidate, _, error in record.rows:
            if candidate == name:
                why[sid] = why.get(sid, "") + f"{validation}: {error}"[:200] + "; "
        model = named[0][1]
        need, _ = required_length(model, frame)
        lengths = dict(zip(panel.ids, panel.lengths))
        rows = [sid for sid in ids if lengths[sid] >= need]
        for sid in set(ids) - set(rows):
            why[sid] = why.get(sid, "") + f"{refit}: too short ({lengths[sid]} < {need}); "
        began = time.perf_counter()
        try:
            fitted = model.clone().fit(frame[frame["unique_id"].isin(rows)]) if rows else None
            forecasts[refit] = by_series(fitted.predict(), ids, h, 1) if rows else {}
        except Exception as err:  # noqa: BLE001 - a refusal is a result: AutoForecaster skips the candidate
            forecasts[refit] = {}
            for sid in rows:
                why[sid] = why.get(sid, "") + f"{refit}: {type(err).__name__}: {err}"[:200] + "; "
        seconds[refit] = time.perf_counter() - began
    return forecasts, seconds, why


def network_rows(name: str, subset: str, ids, values: dict) -> list[dict]:
    """One row per series of ``ids`` for the network ``name`` (:func:`network_fits`); its seconds shared equally."""
    forecasts, seconds, why = network_fits(name, subset, ids, values)
    rows = []
    for sid in ids:
        row = {"model": name, "error": why.get(sid, "").strip().rstrip(";")}
        for key in FITS:
            yhat = forecasts[key].get(sid)
            row[f"{key}_forecast"] = json.dumps(yhat) if yhat else ""
            row[f"{key}_seconds"] = round(seconds[key] / len(ids), 4)
        rows.append(row)
    return rows


def run(subsets, per_subset: int, seed: int, output: Path, data: Path, models=tuple(CANDIDATES),
        shard: tuple[int, int] = (0, 1), ids=None) -> None:
    """Fit ``models`` on the sample, skipping a (series, model) this release has already written: a new
    release writes its own rows, and the summary reads each (series, model)'s latest. ``shard`` (k, n): the
    k-th of every n series of the sample only (n processes share a run); ``ids``: those of the sample only (a
    statistical candidate's rows where a release changed it on some series). The networks of ``models`` are
    fitted after the statistical candidates, once per subset on the sample's series of it (all shards' series)."""
    from tsrsa import __version__
    from tsrsa.benchmarking.results import append_rows

    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    sample = draw(info, subsets, per_subset, seed)
    if ids is not None:
        sample = sample[sample["unique_id"].isin(set(ids))]
    values = read_values(data, sample)
    done = set()
    if output.exists():
        old = pd.read_csv(output, dtype={"unique_id": str})
        done = set(zip(old["unique_id"], old["seed"], old["model"], old["tsrsa_version"]))

    def shared(info_row) -> dict:
        sid, subset = info_row["unique_id"], info_row["subset"]
        return {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "tsrsa_version": __version__,
                "seed": seed, "per_subset": per_subset, "draw": int(info_row["draw"]), "subset": subset,
                "unique_id": sid, "n": len(values[sid]), "horizon": HORIZON[subset], "season": SEASON[subset]}

    local = [name for name in models if name not in NETWORKS]
    for _, info_row in sample.iloc[shard[0]::shard[1]].iterrows():
        sid, subset = info_row["unique_id"], info_row["subset"]
        todo = [name for name in local if (sid, seed, name, __version__) not in done]
        if not todo:
            continue
        rows = [{**shared(info_row), **row} for row in one_series(sid, values[sid], subset, todo)]
        append_rows(output, rows, COLUMNS)
        print(subset, sid, " ".join(f"{r['model']}:{r['final_seconds']}" for r in rows), flush=True)
    for subset, part in sample.groupby("subset", sort=False):
        ids = list(part["unique_id"])
        for name in [n for n in models if n in NETWORKS]:
            if all((sid, seed, name, __version__) in done for sid in ids):
                continue
            rows = [{**shared(info_row), **row} for (_, info_row), row in zip(
                part.iterrows(), network_rows(name, subset, ids, values))]
            append_rows(output, rows, COLUMNS)
            print(subset, name, f"{sum(r[f'{k}_seconds'] for r in rows for k in FITS):.1f} s",
                  f"{sum(bool(r['final_forecast']) for r in rows)} of {len(rows)} series forecast", flush=True)


COST_OUTPUT = HERE / "results" / "auto_m3_cost.csv"


def cost(subset: str, n_series: int, seed: int, output: Path, data: Path, params: dict,
         statistical: bool = False) -> None:
    """AutoForecaster's fit at ``params`` (its defaults otherwise: the seven default candidates, or with
    ``statistical`` the four statistical ones) against each candidate's fit alone (:mod:`auto_cost`), on the
    training parts of the first ``n_series`` of the subset's draw as one panel (``params`` in the Auto row records
    the candidates: "defaults" or "statistical")."""
    import tsrsa
    from auto_cost import time_fits

    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    sample = draw(info, [subset], n_series, seed)
    values = read_values(data, sample)
    h, m = HORIZON[subset], SEASON[subset]
    frame = pd.concat([pd.DataFrame({"unique_id": sid, "ds": np.arange(len(values[sid]) - h),
                                     "y": values[sid][:-h]}) for sid in sample["unique_id"]], ignore_index=True)
    models = ({name: getattr(tsrsa, cls)(h=h, season_length=m) for name, cls in CANDIDATES.items()}
              if statistical else None)
    auto = tsrsa.AutoForecaster(h=h, season_length=m, freq=1, random_state=0, models=models, **params)
    time_fits(auto, frame, output, seed=seed, subset=subset,
              described=json.dumps({**params, "candidates": "statistical" if statistical else "defaults"}))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", default="monthly,quarterly,yearly,other")
    parser.add_argument("--per-subset", type=int, default=100)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--data-dir")
    parser.add_argument("--models", default=",".join(CANDIDATES),
                        help=f"the candidates to fit, or with --summary to choose among (a release's rows replace an "
                             f"earlier release's in the summary): {', '.join(CANDIDATES)} (the default), and the "
                             f"networks {', '.join(NETWORKS)}")
    parser.add_argument("--shard", default="0/1", metavar="K/N",
                        help="fit the K-th of every N series of the sample (N processes share a run; default 0/1)")
    parser.add_argument("--ids", type=Path, metavar="FILE",
                        help="fit only the series of the sample named in FILE (one id per line; statistical "
                             "candidates only)")
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--compare", nargs=4, action="append", default=[],
                        metavar=("RULE", "WINDOWS", "REFERENCE", "REFERENCE_WINDOWS"),
                        type=lambda text: int(text) if text.isdigit() else text,
                        help="--summary: a rule over another (or over a candidate alone, windows 1), paired by series")
    parser.add_argument("--first", type=int, help="--summary of the first N series of each subset's draw")
    parser.add_argument("--use", action="append", default=[], metavar="MODEL=RELEASE",
                        help="--summary: that release's rows stand for the model (default: each model's latest)")
    parser.add_argument("--releases", metavar="MODEL[=R1,R2,...]",
                        help="--summary of one candidate per release that fitted it (or per release listed), on the "
                             "series all of them fitted")
    parser.add_argument("--cost", type=int, metavar="N",
                        help="time AutoForecaster's fit at its defaults against each default candidate's on the "
                             "first N series of each subset of --subsets (one panel) and append the rows to "
                             "results/auto_m3_cost.csv")
    parser.add_argument("--statistical", action="store_true",
                        help="--cost with the four statistical candidates only")
    parser.add_argument("--param", "-p", action="append", default=[], metavar="KEY=JSON",
                        help="an AutoForecaster parameter for --cost (e.g. -p margin=2 -p combine=null)")
    args = parser.parse_args(argv)
    models = [name.strip() for name in args.models.split(",")]
    known = (*CANDIDATES, *NETWORKS)
    if set(models) - set(known):
        parser.error(f"unknown models {sorted(set(models) - set(known))}; choose from {', '.join(known)}")
    if args.cost:
        params = {key: json.loads(value) for key, _, value in (p.partition("=") for p in args.param)}
        for subset in [s.strip() for s in args.subsets.split(",")]:
            cost(subset, args.cost, args.seed, COST_OUTPUT, data_folder(args.data_dir), params, args.statistical)
        return
    if args.summary and args.releases:
        rows = pd.read_csv(args.output, dtype={"unique_id": str}, keep_default_na=False)
        model, _, releases = args.releases.partition("=")
        table = release_table(rows, data_folder(args.data_dir), model, args.first,
                              releases.split(",") if releases else None)
        print(table.to_string(index=False, float_format="%.3f"))
        return
    if args.summary:
        use = dict(item.partition("=")[::2] for item in args.use)
        table, ranking = summary(args.output, data_folder(args.data_dir), args.first, use, models)
        with pd.option_context("display.width", 250, "display.max_rows", 500):
            print(table.drop(columns="per_series").to_string(index=False, float_format="%.3f"))
            print("\nthe rules on the later block, over the best candidate alone in each subset:")
            print(ranking.to_string(index=False, float_format="%.3f"))
            for rule, windows, reference, reference_windows in args.compare:
                print(f"\n{rule} (n_windows={windows}) over {reference} (n_windows={reference_windows}), "
                      f"later block, bootstrap 95 % over series:")
                print(paired(table, rule, windows, reference, reference_windows).to_string(
                    index=False, float_format="%.3f"))
        return
    subsets = [s.strip() for s in args.subsets.split(",")]
    unknown = sorted(set(subsets) - set(HORIZON))
    if unknown:
        parser.error(f"unknown subsets {unknown}; choose from {', '.join(HORIZON)}")
    k, _, n = args.shard.partition("/")
    if not (k.isdigit() and n.isdigit() and int(k) < int(n)):
        parser.error(f"--shard {args.shard!r}: give K/N with 0 <= K < N, e.g. 0/2 and 1/2 for two processes")
    if set(models) & set(NETWORKS) and n != "1":
        parser.error("a network is fitted once on a subset's whole sample: run it without --shard (one process per "
                     "network, e.g. --models RSA and --models Transformer,DLinear)")
    ids = None
    if args.ids:
        if set(models) & set(NETWORKS):
            parser.error("--ids fits statistical candidates only: a network is fitted once on a subset's whole sample")
        ids = [line.strip() for line in args.ids.read_text().splitlines() if line.strip()]
    run(subsets, args.per_subset, args.seed, args.output, data_folder(args.data_dir), models, (int(k), int(n)), ids)


if __name__ == "__main__":
    main()