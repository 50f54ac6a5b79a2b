"""AutoForecaster's combination rules on M3's four subsets: chosen on inner windows, scored on a later block.

    nohup nice python benchmarks/auto_m3_study.py --subsets monthly --per-subset 100 &
    nohup nice python benchmarks/auto_m3_study.py --subsets quarterly,yearly,other --per-subset 100 &
    python benchmarks/auto_m3_study.py --summary --first 100
    python benchmarks/auto_m3_study.py --summary --models SeasonalNaive,ETS,ARIMA,Theta,RSA,Transformer,DLinear
    nohup nice python benchmarks/auto_m3_study.py --cost 20 --subsets monthly,quarterly -p margin=2 -p combine=null &
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

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "auto_m3_study.csv"
SEED = 20261129
HORIZON = {"yearly": 6, "quarterly": 8, "monthly": 18, "other": 8}
SEASON = {"yearly": 1, "quarterly": 4, "monthly": 12, "other": 1}
CANDIDATES = {"SeasonalNaive": "SeasonalNaiveForecaster", "ETS": "ETSForecaster", "ARIMA": "ARIMAForecaster",
              "Theta": "ThetaForecaster"}
#: the default set's networks: one fit per subset's panel (global), not per series
NETWORKS = ("RSA", "Transformer", "DLinear")
FITS = ("cv2", "cv1", "final", "cv2_fit1")
COLUMNS = ("date", "tsrsa_version", "seed", "per_subset", "draw", "subset", "unique_id", "n", "horizon", "season",
           "model", *(f"{k}_forecast" for k in FITS), *(f"{k}_seconds" for k in FITS), "error")


def data_folder(given) -> Path:
    import os

    if given:
        return Path(given)
    if os.environ.get("TSRSA_DATA_DIR"):
        return Path(os.environ["TSRSA_DATA_DIR"]) / "m3"
    return HERE.parent.parent / "shared" / "datasets" / "m3"


def draw(info: pd.DataFrame, subsets, per_subset: int, seed: int) -> pd.DataFrame:
    """The sample: ``per_subset`` ids of each subset (all of them when it holds fewer), drawn with ``seed``;
    ``draw`` is each series' position in its subset's draw."""
    rng = np.random.default_rng(seed)
    parts = []
    for subset in ("yearly", "quarterly", "monthly", "other"):  # one order, so a subset's draw never depends
        ids = np.sort(info.loc[info["subset"] == subset, "unique_id"].to_numpy())  # on which others are run
        chosen = rng.permutation(ids)[:per_subset]
        if subset in subsets:
            parts.append(pd.DataFrame({"unique_id": chosen, "subset": subset, "draw": np.arange(len(chosen))}))
    # round robin over the subsets, so that a run stopped early holds a prefix of every subset's draw
    return pd.concat(parts, ignore_index=True).sort_values("draw", kind="stable", ignore_index=True)


def read_values(folder: Path, sample: pd.DataFrame) -> dict:
    """{unique_id: float array of the whole series (test part included)}."""
    out = {}
    for subset in sorted(set(sample["subset"])):
        frame = pd.read_csv(folder / f"M3-{subset}.csv", dtype={"unique_id": str})
        frame = frame[frame["unique_id"].isin(set(sample["unique_id"]))]
        for sid, group in frame.groupby("unique_id", sort=False):
            out[sid] = group["y"].to_numpy(dtype=np.float64)
    return out


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
    ``held_look_back`` gives that origin's panel, validated on the series that hold its required length plus the
    two windows, refitted on those that hold the required length.
    Returns ({fit: {id: forecast}}, {fit: seconds of the panel}, {id: why a series has no forecast})."""
    from auto_m4_study import by_series, candidates

    from tsrsa.forecasters.auto_candidates import held_look_back

    h, m = HORIZON[subset], SEASON[subset]
    base = candidates(h, m, 0)[name]  # as AutoForecaster(h, season_length=m, freq=1, random_state=0) builds it
    forecasts, seconds, why = {}, {}, {}
    for (validation, refit), cut in ((("cv2", "final"), h), (("cv2_fit1", "cv1"), 2 * h)):
        frame = long_frame(values, ids, cut)
        panel = base.to_panel(frame)
        model = held_look_back(base, panel, 2 * h)
        probe = model.clone()
        probe.check_params()
        need, _ = probe.required_length(panel)
        lengths = dict(zip(panel.ids, panel.lengths))
        calls = ((validation, need + 2 * h, 2, lambda f: model.clone().cross_validate(
                     f, n_windows=2, step_size=h, refit=False)),
                 (refit, need, 1, lambda f: model.clone().fit(f).predict()))
        for key, least, windows, call in calls:
            rows = [sid for sid in ids if lengths[sid] >= least]
            for sid in set(ids) - set(rows):
                why[sid] = why.get(sid, "") + f"{key}: too short ({lengths[sid]} < {least}); "
            began = time.perf_counter()
            try:
                forecasts[key] = by_series(call(frame[frame["unique_id"].isin(rows)]), ids, h, windows) if rows else {}
            except Exception as err:  # noqa: BLE001 - a refusal is a result: AutoForecaster skips the candidate
                forecasts[key] = {}
                for sid in rows:
                    why[sid] = why.get(sid, "") + f"{key}: {type(err).__name__}: {err}"[:200] + "; "
            seconds[key] = time.perf_counter() - began
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
        shard: tuple[int, int] = (0, 1)) -> None:
    """Fit ``models`` on the sample, skipping a (series, model) this release has already written: a new
    release writes its own rows, and the summary reads each (series, model)'s latest. ``shard`` (k, n): the
    k-th of every n series of the sample only (n processes share a run). The networks of ``models`` are fitted
    after the statistical candidates, once per subset on the sample's series of it (all shards' series)."""
    from tsrsa import __version__
    from tsrsa.benchmarking.results import append_rows

    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    sample = draw(info, subsets, per_subset, seed)
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


# ---------------------------------------------------------------------- the rules, offline
class SeriesList:
    """Series in the form :func:`tsrsa.estimator.model_choice.naive_scale` reads."""

    def __init__(self, series):
        self.all, self.n_series = series, len(series)

    def series(self, i):
        return self.all[i]


#: rule -> (by, combine, top_k, margin, gate): AutoForecaster's options; ``margin`` (z) the panel fallback within
#: noise; ``gate``: a candidate joins the best only where the validation cannot tell them apart by that margin
RULES = {"best": ("series", None, 1, None, False), "mean2": ("series", "mean", 2, None, False),
         "weighted2": ("series", "weighted", 2, None, False), "mean3": ("series", "mean", 3, None, False),
         "mean_all": ("series", "mean", 4, None, False), "panel_best": ("panel", None, 1, None, False),
         "panel_mean2": ("panel", "mean", 2, None, False), "noise_best": ("series", None, 1, 1.0, False),
         "noise2_best": ("series", None, 1, 2.0, False), "noise3_best": ("series", None, 1, 3.0, False),
         "noise_mean2": ("series", "mean", 2, 1.0, False),
         "noise2_mean2": ("series", "mean", 2, 2.0, False), "noise2_gate2": ("series", "mean", 2, 2.0, True),
         "noise2_gate3": ("series", "mean", 3, 2.0, True), "noise1_gate2": ("series", "mean", 2, 1.0, True),
         "noise3_gate2": ("series", "mean", 2, 3.0, True), "noise2_gate_all": ("series", "mean", 7, 2.0, True)}


def _load(text):
    return np.array(json.loads(text)) if isinstance(text, str) and text else None


def panel_arrays(group: pd.DataFrame, names, values: dict, h: int):
    """Per subset: ids, and (S, C, W=2, h) inner forecasts for each origin and window count, the scored
    forecasts (S, C, h) and their seconds."""
    ids = sorted(set(group["unique_id"]))
    S, C = len(ids), len(names)
    arrays = {key: np.full((S, C, h), np.nan) for key in ("cv1", "final")}
    arrays.update({key: np.full((S, C, 2, h), np.nan) for key in ("cv2", "cv2_fit1")})
    seconds = {key: np.zeros((S, C)) for key in FITS}
    for _, row in group.iterrows():
        i, c = ids.index(row["unique_id"]), names.index(row["model"])
        for key in FITS:
            yhat = _load(row[f"{key}_forecast"])
            if yhat is not None:
                arrays[key][i, c] = yhat.reshape(arrays[key].shape[2:])
            seconds[key][i, c] = float(row[f"{key}_seconds"])
    return ids, arrays, seconds


def rule_weights(errors, ids, names, rule, blocked, inner_abs=None):
    """(S, C) weights of ``rule`` (RULES) from validation errors (S, C); ``inner_abs`` (S, C, W, h) the scaled
    absolute step errors the margin compares."""
    from tsrsa.estimator.model_choice import choice_weights, within_noise

    by, combine, top_k, margin, gate = RULES[rule]
    fallback = None if margin is None else within_noise(inner_abs, errors, z=margin)
    return choice_weights(errors, ids, names, by=by, combine=combine, top_k=top_k, blocked=blocked,
                          also_panel=fallback, step_errors=inner_abs, margin=margin if gate else None)


def rule_table(rows: pd.DataFrame, data: Path) -> pd.DataFrame:
    """One line per (subset, origin, n_windows, rule or candidate): mean MASE, sMAPE, the series scored, and
    AutoForecaster's fit seconds over the most expensive candidate's."""
    from tsrsa.benchmarking.m3_sample import mase, smape
    from tsrsa.estimator.model_choice import combined, naive_scale, scaled_errors

    sample = rows.drop_duplicates("unique_id")
    values = read_values(data, sample[["unique_id", "subset"]])
    out = []
    for subset, group in rows.groupby("subset"):
        h, m = HORIZON[subset], SEASON[subset]
        names = [name for name in (*CANDIDATES, *NETWORKS) if name in set(group["model"])]
        network = np.isin(names, NETWORKS)  # (C,) a network's refit is one panel fit, kept whole
        ids, arrays, seconds = panel_arrays(group, names, values, h)
        whole = [values[sid] for sid in ids]
        for origin in ("later", "test"):
            for W in (1, 2):
                # the frame AutoForecaster sees, its inner forecasts, the forecast scored and its targets
                frame = [v[: len(v) - h - (h if origin == "later" else 0)] for v in whole]
                if origin == "later":
                    inner = arrays["cv2"][:, :, :1] if W == 1 else arrays["cv2_fit1"]
                    scored, refit_seconds = arrays["cv1"], seconds["cv1"]
                    valid_seconds = seconds["cv2"] if W == 1 else seconds["cv2_fit1"]
                else:
                    inner = arrays["cv1"][:, :, None] if W == 1 else arrays["cv2"]
                    scored, refit_seconds = arrays["final"], seconds["final"]
                    valid_seconds = seconds["cv1"] if W == 1 else seconds["cv2"]
                targets = np.stack([v[len(f): len(f) + h] for v, f in zip(whole, frame)])  # (S, h)
                ends = np.array([max(len(f) - W * h, 1) for f in frame])
                y = np.stack([np.stack([f[e + w * h: e + (w + 1) * h] if e + (w + 1) * h <= len(f) else
                                        np.full(h, np.nan) for w in range(W)]) for f, e in zip(frame, ends)])
                scale = naive_scale(SeriesList(frame), ends, m)
                errors = scaled_errors(inner, y, scale)  # (S, C)
                inner_abs = np.abs(inner - y[:, None]) / scale[:, None, None, None]  # (S, C, W, h)
                blocked = ~np.isfinite(scored).all(axis=2)

                def score(name, yhat, kept=None, cost=None):
                    ok = np.isfinite(yhat).all(axis=1)
                    mases = [mase(t, f, fr, m) for t, f, fr, k in zip(targets, yhat, frame, ok) if k]
                    smapes = [smape(t, f) for t, f, k in zip(targets, yhat, ok) if k]
                    line = {"subset": subset, "origin": origin, "n_windows": W, "model": name,
                            "series": int(ok.sum()), "of": len(ids), "mase": float(np.nanmean(mases)),
                            "smape": float(np.mean(smapes)), "kept": kept or "", "auto_seconds": np.nan,
                            "cost_ratio": np.nan, "per_series": [(i, a, b) for i, a, b in zip(
                                np.flatnonzero(ok), mases, smapes)]}
                    if cost is not None:
                        line["auto_seconds"], line["cost_ratio"] = cost
                    return line

                most = float(refit_seconds.sum(axis=0).max())  # the most expensive candidate's fits
                for rule in RULES:
                    weights = rule_weights(errors, ids, names, rule, blocked, inner_abs)
                    yhat = combined(weights, scored)
                    used = weights > 0
                    cost = float(valid_seconds.sum() + (refit_seconds * used)[:, ~network].sum()
                                 + refit_seconds[:, network & used.any(axis=0)].sum())
                    share = used.mean(axis=0)
                    kept = " ".join(f"{n}={s:.2f}" for n, s in zip(names, share))
                    out.append(score(rule, yhat, kept, (cost, cost / most)))
                if W == 1:  # each candidate alone; where it cannot fit a series, the seasonal naive there
                    naive = scored[:, names.index("SeasonalNaive")]
                    for c, name in enumerate(names):
                        alone = np.where(np.isfinite(scored[:, c]).all(axis=1)[:, None], scored[:, c], naive)
                        line = score(name, alone)
                        line["kept"] = f"fitted on {int(np.isfinite(scored[:, c]).all(axis=1).sum())}"
                        out.append(line)
    return pd.DataFrame(out)


def rule_ranking(table: pd.DataFrame, origin: str = "later") -> pd.DataFrame:
    """Each rule and window count at ``origin``: its score over the best candidate alone in each subset (MASE
    and sMAPE), the geometric mean of those ratios over the subsets and the worst of them, best first."""
    names = [*CANDIDATES, *NETWORKS]
    at = table[table["origin"] == origin]
    best = at[at["model"].isin(names) & (at["n_windows"] == 1)].groupby("subset")[["mase", "smape"]].min()
    rules = at[~at["model"].isin(names)].copy()
    for metric in ("mase", "smape"):
        rules[f"{metric}_ratio"] = rules[metric].to_numpy() / best.loc[rules["subset"], metric].to_numpy()
    out = rules.groupby(["n_windows", "model"]).agg(
        mase_gmean=("mase_ratio", lambda r: float(np.exp(np.mean(np.log(r))))), mase_worst=("mase_ratio", "max"),
        smape_gmean=("smape_ratio", lambda r: float(np.exp(np.mean(np.log(r))))), smape_worst=("smape_ratio", "max"),
        cost_worst=("cost_ratio", "max")).reset_index()
    return out.sort_values("mase_gmean", kind="stable", ignore_index=True)


def paired(table: pd.DataFrame, rule: str, windows: int, reference: str, reference_windows: int,
           origin: str = "later", draws: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per subset: ``rule``'s mean MASE and sMAPE over ``reference``'s, on the series both scored, with a
    bootstrap 95 % interval over series (``draws`` resamples)."""
    rng = np.random.default_rng(seed)
    out = []
    for subset, group in table[table["origin"] == origin].groupby("subset"):
        a = group[(group["model"] == rule) & (group["n_windows"] == windows)]["per_series"].item()
        b = group[(group["model"] == reference) & (group["n_windows"] == reference_windows)]["per_series"].item()
        a, b = {i: (x, y) for i, x, y in a}, {i: (x, y) for i, x, y in b}
        common = sorted(set(a) & set(b))
        line = {"subset": subset, "series": len(common)}
        for k, metric in enumerate(("mase", "smape")):
            x = np.array([a[i][k] for i in common])
            y = np.array([b[i][k] for i in common])
            keep = np.isfinite(x) & np.isfinite(y)
            x, y = x[keep], y[keep]
            picks = rng.integers(0, len(x), (draws, len(x)))
            ratios = x[picks].mean(axis=1) / y[picks].mean(axis=1)
            line[f"{metric}_ratio"] = float(x.mean() / y.mean())
            line[f"{metric}_low"], line[f"{metric}_high"] = np.quantile(ratios, [0.025, 0.975])
        out.append(line)
    return pd.DataFrame(out)


def summary(output: Path, data: Path, first: int | None = None, use: dict[str, str] | None = None,
            models=tuple(CANDIDATES)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rule table and the ranking of the rules on the later block among the candidates ``models`` (``first``:
    the first series of each subset's draw only; ``use``: {model: release} whose rows stand for that model, else
    its latest)."""
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    rows = rows[rows["model"].isin(models)]
    for model, release in (use or {}).items():
        rows = rows[(rows["model"] != model) | (rows["tsrsa_version"] == release)]
    rows = rows.drop_duplicates(["unique_id", "seed", "model"], keep="last")  # each model's latest run
    if first is not None:
        rows = rows[rows["draw"] < first]
    table = rule_table(rows, data)
    return table, rule_ranking(table)


def release_table(rows: pd.DataFrame, data: Path, model: str, first: int | None = None,
                  releases: list[str] | None = None) -> pd.DataFrame:
    """One line per (subset, release) of ``model`` alone: mean MASE and sMAPE on the later block (``cv1``) and the
    test part (``final``), the seconds of its four fits per series, and the series scored: those every release
    (or every one of ``releases``) fitted at both origins (``first``: the first series of each subset's draw only)."""
    from tsrsa.benchmarking.m3_sample import mase, smape

    rows = rows[rows["model"] == model]
    if releases:
        rows = rows[rows["tsrsa_version"].isin(releases)]
    if first is not None:
        rows = rows[rows["draw"] < first]
    values = read_values(data, rows.drop_duplicates("unique_id")[["unique_id", "subset"]])
    out = []
    for subset, group in rows.groupby("subset"):
        h, m = HORIZON[subset], SEASON[subset]
        ok = group[(group["cv1_forecast"] != "") & (group["final_forecast"] != "")]
        common = set.intersection(*(set(g["unique_id"]) for _, g in ok.groupby("tsrsa_version")))
        for release, runs in ok[ok["unique_id"].isin(common)].groupby("tsrsa_version", sort=False):
            line = {"subset": subset, "release": release, "series": len(runs)}
            for origin, key, cut in (("later", "cv1", 2 * h), ("test", "final", h)):
                scores = []
                for _, row in runs.iterrows():
                    v = values[row["unique_id"]]
                    fitted, target = v[: len(v) - cut], v[len(v) - cut: len(v) - cut + h]
                    yhat = _load(row[f"{key}_forecast"])
                    scores.append((mase(target, yhat, fitted, m), smape(target, yhat)))
                line[f"{origin}_mase"] = float(np.nanmean([a for a, _ in scores]))
                line[f"{origin}_smape"] = float(np.mean([b for _, b in scores]))
            line["seconds_per_series"] = float(runs[[f"{k}_seconds" for k in FITS]].sum(axis=1).mean())
            out.append(line)
    return pd.DataFrame(out)


COST_OUTPUT = HERE / "results" / "auto_m3_cost.csv"
COST_COLUMNS = ("date", "tsrsa_version", "seed", "subset", "n_series", "model", "params", "fit_seconds")


def cost(subset: str, n_series: int, seed: int, output: Path, data: Path, params: dict) -> None:
    """AutoForecaster's fit at ``params`` (its defaults otherwise, the four statistical candidates) and each
    candidate's fit alone, on the training parts of the first ``n_series`` of the subset's draw as one panel;
    one row per fit, appended as it finishes."""
    import tsrsa
    from tsrsa.benchmarking.results import append_rows

    info = pd.read_csv(data / "M3-info.csv", dtype={"unique_id": str})
    sample = draw(info, [subset], n_series, seed)
    values = read_values(data, sample)
    h, m = HORIZON[subset], SEASON[subset]
    frame = pd.concat([pd.DataFrame({"unique_id": sid, "ds": np.arange(len(values[sid]) - h),
                                     "y": values[sid][:-h]}) for sid in sample["unique_id"]], ignore_index=True)
    models = {name: getattr(tsrsa, cls)(h=h, season_length=m) for name, cls in CANDIDATES.items()}
    fits = {name: (model, "") for name, model in models.items()}
    fits["Auto"] = (tsrsa.AutoForecaster(h=h, season_length=m, models=models, **params), json.dumps(params))
    for name, (model, described) in fits.items():
        began = time.perf_counter()
        model.clone().fit(frame)
        row = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "tsrsa_version": tsrsa.__version__, "seed": seed, "subset": subset, "n_series": len(sample),
               "model": name, "params": described, "fit_seconds": round(time.perf_counter() - began, 3)}
        append_rows(output, [row], COST_COLUMNS)
        print(row, flush=True)


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
                        help="time AutoForecaster's fit against each candidate's on the first N series of each "
                             "subset of --subsets (one panel) and append the rows to results/auto_m3_cost.csv")
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
            cost(subset, args.cost, args.seed, COST_OUTPUT, data_folder(args.data_dir), params)
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
    run(subsets, args.per_subset, args.seed, args.output, data_folder(args.data_dir), models, (int(k), int(n)))


if __name__ == "__main__":
    main()
