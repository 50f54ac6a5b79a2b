"""AutoForecaster's rules applied offline to the M3 study's rows (``auto_m3_study.py`` fits the candidates; its
docstring says at which origins the rules choose and are scored): each rule's weights come from AutoForecaster's
own arithmetic (``choice_weights``, ``combined``) on the recorded forecasts, so a rule costs no fit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from auto_m3_data import CANDIDATES, FITS, HORIZON, NETWORKS, SEASON, load_forecast, read_values


class SeriesList:
    """Series in the form :func:`tsrsa.estimator.model_choice.naive_scale` reads."""

    def __init__(self, series):
        self.all, self.n_series = series, len(series)

    def series(self, i):
        return self.all[i]


#: rule -> (by, combine, top_k, margin, gate): AutoForecaster's options; ``margin`` (z) the panel fallback within
#: noise; ``gate``: a candidate joins the best only where the validation cannot tell them apart by that margin;
#: "auto" (the default since 0.19.6): noise2_gate_all unless the last inner window keeps the mean of the best 2, 3
#: or 4 (``combine="auto"``)
RULES = {"best": ("series", None, 1, None, False), "mean2": ("series", "mean", 2, None, False),
         "weighted2": ("series", "weighted", 2, None, False), "mean3": ("series", "mean", 3, None, False),
         "mean_all": ("series", "mean", 4, None, False), "panel_best": ("panel", None, 1, None, False),
         "panel_mean2": ("panel", "mean", 2, None, False), "noise_best": ("series", None, 1, 1.0, False),
         "noise2_best": ("series", None, 1, 2.0, False), "noise3_best": ("series", None, 1, 3.0, False),
         "noise_mean2": ("series", "mean", 2, 1.0, False),
         "noise2_mean2": ("series", "mean", 2, 2.0, False), "noise2_gate2": ("series", "mean", 2, 2.0, True),
         "noise2_gate3": ("series", "mean", 3, 2.0, True), "noise1_gate2": ("series", "mean", 2, 1.0, True),
         "noise3_gate2": ("series", "mean", 2, 3.0, True), "noise2_gate_all": ("series", "mean", 7, 2.0, True),
         "auto": ("series", "auto", None, 2.0, True)}


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
            yhat = load_forecast(row[f"{key}_forecast"])
            if yhat is not None:
                arrays[key][i, c] = yhat.reshape(arrays[key].shape[2:])
            seconds[key][i, c] = float(row[f"{key}_seconds"])
    return ids, arrays, seconds


def rule_weights(errors, ids, names, rule, blocked, inner_abs=None, signed=None):
    """(S, C) weights of ``rule`` (RULES) from validation errors (S, C); ``inner_abs`` (S, C, W, h) the scaled
    absolute step errors the margin compares, ``signed`` the same with their sign ("auto" reads them)."""
    from tsrsa.estimator.model_choice import choice_weights, last_window_rule, within_noise

    by, combine, top_k, margin, gate = RULES[rule]
    if combine == "auto":
        (_, top_k, margin), _ = last_window_rule(signed, ids, names, top_k=top_k, margin=margin)
        combine, gate = "mean", margin is not None
    fallback = None if margin is None else within_noise(inner_abs, errors, z=margin)
    return choice_weights(errors, ids, names, by=by, combine=combine, top_k=top_k, blocked=blocked,
                          also_panel=fallback, step_errors=inner_abs, margin=margin if gate else None)


def median_of_kept(weights: np.ndarray, yhat: np.ndarray) -> np.ndarray:
    """(S, h) at each step the median of the forecasts ``yhat`` (S, C, h) that a series keeps (weight > 0), their
    weights ignored: a combination screened against AutoForecaster's mean (``auto_rules.py --median``)."""
    kept = np.where((weights > 0)[:, :, None], yhat, np.nan)
    out = np.full(yhat.shape[:1] + yhat.shape[2:], np.nan)
    some = (weights > 0).any(axis=1)
    out[some] = np.nanmedian(kept[some], axis=1)
    return out


def rule_table(rows: pd.DataFrame, data: Path, median: bool = False) -> pd.DataFrame:
    """One line per (subset, origin, n_windows, rule or candidate): mean MASE, sMAPE, the series scored, and
    AutoForecaster's fit seconds over the most expensive candidate's (``median``: each rule's kept candidates
    combined by :func:`median_of_kept`)."""
    from tsrsa.benchmarking.m3_sample import mase, smape
    from tsrsa.estimator.model_choice import combined, naive_scale, scaled_errors

    combine = median_of_kept if median else combined

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
                signed = (inner - y[:, None]) / scale[:, None, None, None]  # (S, C, W, h)
                inner_abs = np.abs(signed)
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
                    weights = rule_weights(errors, ids, names, rule, blocked, inner_abs, signed)
                    yhat = combine(weights, scored)
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
    table = rule_table(latest_rows(rows[rows["model"].isin(models)], first, use), data)
    return table, rule_ranking(table)


def latest_rows(rows: pd.DataFrame, first: int | None = None, use: dict[str, str] | None = None) -> pd.DataFrame:
    """Each (series, seed, model)'s latest row (``use``: {model: release} whose rows stand for that model;
    ``first``: the first series of each subset's draw only)."""
    for model, release in (use or {}).items():
        rows = rows[(rows["model"] != model) | (rows["tsrsa_version"] == release)]
    rows = rows.drop_duplicates(["unique_id", "seed", "model"], keep="last")
    return rows if first is None else rows[rows["draw"] < first]


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
                    yhat = load_forecast(row[f"{key}_forecast"])
                    scores.append((mase(target, yhat, fitted, m), smape(target, yhat)))
                line[f"{origin}_mase"] = float(np.nanmean([a for a, _ in scores]))
                line[f"{origin}_smape"] = float(np.mean([b for _, b in scores]))
            line["seconds_per_series"] = float(runs[[f"{k}_seconds" for k in FITS]].sum(axis=1).mean())
            out.append(line)
    return pd.DataFrame(out)
