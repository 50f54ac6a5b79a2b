"""AutoForecaster's candidates: the default set, the windows they are validated on, the refit of what the series
keep, and the candidates a saved one names, rebuilt."""
from __future__ import annotations

import numpy as np

from tsrsa.data.frequency import look_back_seasons
from tsrsa.estimator.choice_record import ChoiceRecord, required_length
from tsrsa.estimator.model_choice import MIN_VALIDATED, choice_weights, no_candidate, scaled_errors


def local(model) -> bool:
    """Whether ``model`` fits each series on its own (statistical, naive) rather than one network for all."""
    return not type(model).stochastic


def default_candidates(auto, columns: dict) -> list[tuple[str, object]]:
    """The default candidates of ``auto`` (its class docstring), configured with its arguments."""
    from tsrsa.forecasters.arima import ARIMAForecaster
    from tsrsa.forecasters.dlinear import DLinearForecaster
    from tsrsa.forecasters.ets import ETSForecaster
    from tsrsa.forecasters.naive import SeasonalNaiveForecaster
    from tsrsa.forecasters.rsa import RSAForecaster
    from tsrsa.forecasters.theta import ThetaForecaster
    from tsrsa.forecasters.transformer import TransformerForecaster

    shared = {**columns, "freq": auto.freq, "fill": auto.fill}
    out = []
    for name, cls in (("SeasonalNaive", SeasonalNaiveForecaster), ("ETS", ETSForecaster), ("ARIMA", ARIMAForecaster),
                      ("Theta", ThetaForecaster), ("RSA", RSAForecaster), ("Transformer", TransformerForecaster),
                      ("DLinear", DLinearForecaster)):
        taken = set(cls.param_names())
        own = {"season_length": auto.season_length, "random_state": auto.random_state}
        if auto.n_jobs is not None:  # else each class's own default
            own["n_jobs"] = auto.n_jobs
        params = {k: v for k, v in {**shared, **own}.items() if k in taken}
        out.append((name, cls(auto.h, **params)))
    return out


def held_look_back(model, panel, block: int):
    """``model``, or a copy at the look-back its default rule gives the panel's median series where the shortest
    series takes that away.

    A network left to the default look-back (``input_size=None``) sets it by the panel's shortest series, so
    that it keeps a few training windows (:func:`tsrsa.estimator.plan.default_input_size`): alone, a short
    series is fitted rather than refused. Among candidates it need not be: the network is validated and
    refitted at the look-back the rule gives the median series with the validation ``block`` taken off
    (``input_size`` set), and the series too short for it (at most half) are left to the other candidates;
    where that is the shortest series' look-back too, ``model`` itself."""
    from tsrsa.estimator.neural import NeuralForecaster

    if not isinstance(model, NeuralForecaster) or model.input_size is not None:
        return model
    taken = int(block) + int(model.val_size)  # the steps a fit on the series before the block holds out
    median = model.input_size_for(int(np.median(panel.lengths)) - taken, panel.freq)
    if median == model.input_size_for(int(panel.lengths.min()) - taken, panel.freq):
        return model
    return model.clone().set_params(input_size=median)


def validation_windows(candidates, panel, frame, h: int, step: int, n_windows: int) -> tuple[list, list, int]:
    """(the candidates as validated, the (observations, reason) each needs to fit a series, the windows): the most
    windows up to ``n_windows`` with which some series is long enough to validate two candidates (the one there
    is, alone), else one (one series of 40 months at h 18 is validated on a window of 18 steps: two leave 4 months before
    them, too few for any candidate)."""
    W = int(n_windows)
    while True:
        block = h + (W - 1) * step
        named = [(name, held_look_back(model, panel, block)) for name, model in candidates]
        needs = [required_length(model, frame) for _, model in named]
        least = np.array([need for need, _ in needs]) + block
        validates = (panel.lengths[:, None] >= least[None, :]).sum(axis=1)  # (S,) candidates each series holds
        if W == 1 or (validates >= min(MIN_VALIDATED, len(named))).any():
            return named, needs, W
        W -= 1


def longer_look_backs(candidates, named, panel, frame, block: int) -> list:
    """For each of ``candidates`` (as given; ``named``: as validated, :func:`validation_windows`), a copy of the
    network at twice the look-back it is validated at, where the look-back was left to the default rule
    (``input_size=None``), the panel's frequency gives it no season (integer time, yearly data) and more than
    half of the series hold the longer one with the validation ``block``; else None. None for all where no
    DLinear is among those networks: it is the scout (:func:`validate_candidates`).

    The default rule holds a season where the time index names one; on integer time it takes two horizons, which
    can miss the data's cycle (26 steps of weekly data), and the validation windows tell the two apart (on M4
    Weekly they choose 52 steps, and the later block agrees). Where the rule holds a season already, twice it
    is not tried: on weekly dates the windows preferred 104 weeks to 52 where the later block did not, at
    twice the fit time (benchmarks/RESULTS.md, "A network's look-back on integer time")."""
    from tsrsa.estimator.neural import NeuralForecaster
    from tsrsa.forecasters.dlinear import DLinearForecaster

    if look_back_seasons(panel.freq) != (1,):  # the default rule holds a season already
        return [None] * len(named)
    out = []
    for (_, given), (_, model) in zip(candidates, named):
        if not isinstance(given, NeuralForecaster) or given.input_size is not None:
            out.append(None)
            continue
        taken = int(block) + int(model.val_size)
        L = int(model.input_size) if model.input_size is not None else model.input_size_for(
            int(panel.lengths.min()) - taken, panel.freq)
        longer = model.clone().set_params(input_size=2 * L)
        need, why = required_length(longer, frame)
        out.append(longer if why is not None and (panel.lengths >= need + block).mean() > 0.5 else None)
    if not any(isinstance(model, DLinearForecaster) for model in out if model is not None):
        return [None] * len(out)
    return out


def validate_candidates(named, needs, longer, panel, frame, record, *, windows: int, step: int, h: int, y, scale,
                        id_col: str):
    """Validate every candidate of ``named`` (their ``needs``, :func:`validation_windows`), the networks with a
    ``longer`` look-back at the one their scout chooses: the first DLinear among them (a linear map of the
    window, the cheapest network to fit) is validated at both look-backs and keeps the one of the lower mean MASE
    over the series both validated (the shorter where they tie or none did), and the other networks with a
    longer look-back take the same choice (each at twice its own look-back, or at its own), validated once: the
    choice costs one more DLinear fit. ``y`` (S, W, h): the validation values, ``scale`` (S,) their MASE scales.
    Failures and too-short series of what is kept are recorded in ``record``. Returns (the candidates as kept,
    their needs, their forecasts (S, C, W, h), one look-back row per network with a longer one ``[name,
    look-back, its MASE, longer, its MASE, kept]``, a MASE NaN where that look-back was not validated)."""
    from tsrsa.forecasters.dlinear import DLinearForecaster

    named, needs = list(named), list(needs)
    yhat = np.full((panel.n_series, len(named), windows, h), np.nan)
    block = h + (windows - 1) * step

    def forecasts(c, model, need):  # (S, W, h) and what to record of them
        scratch = ChoiceRecord(record.ids, record.names, record.id_col)
        scratch.too_short(c, panel.lengths, need[0], need[1], block)
        out = np.full((panel.n_series, windows, h), np.nan)
        rows = np.flatnonzero(panel.lengths >= need[0] + block)
        if rows.size:
            for _, cv in scratch.attempt(c, model, frame, lambda m_, f: m_.cross_validate(
                    f, n_windows=windows, step_size=step, refit=False), rows=rows):
                got = panel.ids.get_indexer(cv[id_col].to_numpy()[:: windows * h])  # cv: series, cutoff, step
                out[got] = cv["yhat"].to_numpy().reshape(len(got), windows, h)
        return out, scratch.rows

    done, keep, mase = {}, False, np.full(2, np.nan)
    scout = next((c for c, model in enumerate(longer) if isinstance(model, DLinearForecaster)), None)
    if scout is not None:
        short = forecasts(scout, named[scout][1], needs[scout])
        long_ = forecasts(scout, longer[scout], required_length(longer[scout], frame))
        errors = scaled_errors(np.stack([short[0], long_[0]], axis=1), y, scale)  # (S, 2)
        both = np.isfinite(errors).all(axis=1)
        if both.any():
            mase = errors[both].mean(axis=0)
        keep = bool(both.any() and mase[1] < mase[0])
        done[scout] = long_ if keep else short
    look_backs = []
    for c, (name, model) in enumerate(named):
        if longer[c] is not None:
            L = int(longer[c].input_size)
            if keep:
                named[c], needs[c] = (name, longer[c]), required_length(longer[c], frame)
            out, rows = done[c] if c in done else forecasts(c, named[c][1], needs[c])
            score = mase
            if c != scout:  # its own MASE at the look-back it was validated at, over the series it validated
                errors = scaled_errors(out[:, None], y, scale)[:, 0]
                own = float(np.nanmean(errors)) if np.isfinite(errors).any() else np.nan
                score = np.array([np.nan, own]) if keep else np.array([own, np.nan])
            look_backs.append([name, L // 2, float(score[0]), L, float(score[1]), L if keep else L // 2])
        else:
            out, rows = forecasts(c, model, needs[c])
        yhat[:, c] = out
        record.rows.extend(rows)
    return named, needs, yhat, look_backs


def refit_kept(named, frame, errors, steps, record, able, by_panel, *, choose, combine, top_k,
               margin) -> tuple[dict, np.ndarray]:
    """Fit what is kept on the whole frame (``errors`` (S, C): the validation MASE; ``steps`` (S, C, W, h): the
    scaled validation step errors the margin compares; ``record``: the ChoiceRecord; ``able`` (C, S): the series
    long enough for each candidate, a network is fitted on all of those; ``by_panel`` (S,): the series that rank
    the candidates by the panel's means; the rest: AutoForecaster's options); a refit that fails on a series is
    recorded there and the series keeps the next best. Returns (name -> fitted model, weights)."""
    fitted: dict[str, tuple[object, set]] = {}
    blocked = np.zeros(errors.shape, dtype=bool)  # (S, C) what a series may not keep: its refit failed
    while True:  # ends: each pass that fails blocks at least one more (series, candidate)
        weights = choice_weights(errors, record.ids, record.names, by=choose, combine=combine, top_k=top_k,
                                 blocked=blocked, also_panel=by_panel, step_errors=steps, margin=margin,
                                 reasons=record.reasons)
        failed = False
        for c, (name, model) in enumerate(named):
            keep = weights[:, c] > 0
            short = np.flatnonzero(keep & ~able[c])
            if short.size:  # kept by the panel's ranking, too short to fit: not tried
                need, why = required_length(model, frame)
                record.fail(short, c, "refit", f"too short to fit: {why} needs {need} observations" if why
                            else "too short to fit")
                blocked[short, c], failed = True, True
                continue
            if not keep.any():
                continue
            want = set(np.flatnonzero(keep if local(model) else able[c]))
            if name in fitted and want <= fitted[name][1]:
                continue
            done = record.attempt(c, model, frame, lambda m_, f: m_.fit(f), rows=sorted(want), stage="refit")
            fitted.pop(name, None)
            for rows, fit in done:
                fitted[name] = (fit, set(rows))
            lost = sorted(want - fitted.get(name, (None, set()))[1])
            if lost:
                blocked[lost, c], failed = True, True
        if not failed:
            break
    kept = {name: fitted[name][0] for c, (name, _) in enumerate(named) if (weights[:, c] > 0).any()}
    return kept, weights


def refit_unranked(named, frame, keep, record) -> tuple[dict, np.ndarray]:
    """Where no series ranks two candidates: fit the candidates ``keep`` (S, C) marks on the series that keep
    them; the weights are each series' mean of those that fit (a failure recorded and left out). Returns
    (name -> fitted model, weights); ValueError naming a series that none fits."""
    keep, fitted = keep.copy(), {}
    for c, (name, model) in enumerate(named):
        rows = np.flatnonzero(keep[:, c])
        if not rows.size:
            continue
        done = record.attempt(c, model, frame, lambda m_, f: m_.fit(f), rows=list(rows), stage="refit")
        got = set()
        for part, fit in done:
            fitted[name] = fit
            got |= set(part)
        keep[sorted(set(rows) - got), c] = False
    empty = np.flatnonzero(~keep.any(axis=1))
    if empty.size:
        raise no_candidate(record.ids[empty[0]], record.names, record.reasons(empty[0]))
    return fitted, keep / keep.sum(axis=1, keepdims=True)


def rebuilt_candidates(specs: list) -> list[tuple[str, object]]:
    """The candidates ``candidate_specs`` wrote, each built from tsrsa's own classes only (a whitelist)."""
    from tsrsa.forecasters.registry import FORECASTERS

    classes = {cls.__name__: cls for cls in FORECASTERS}
    out = []
    for spec in specs:
        cls = classes.get(spec["class"])
        if cls is None:
            raise ValueError(f"candidate class {spec['class']!r} is not a tsrsa forecaster")
        out.append((str(spec["name"]), cls(**cls.upgrade_params(dict(spec["params"])))))
    return out
