"""AutoForecaster: choose among candidate forecasters per series on validation windows, then forecast."""
from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pandas as pd

from tsrsa.data.frames import FrameSpec, forecast_frame
from tsrsa.data.native import as_kind, frame_kind, to_pandas
from tsrsa.data.frequency import season_steps
from tsrsa.data.validation import build_panel, check_continuation, requested_horizon
from tsrsa.estimator.choice_record import ChoiceRecord, candidate_specs
from tsrsa.estimator.conformal import ConformalCalibration, check_enough, check_levels, windows_needed
from tsrsa.estimator.model_choice import (
    CHOOSE_BY, COMBINE, combined, last_window_rule, naive_scale, panel_rows, panel_weights, scaled_errors,
    validation_targets, within_noise,
)
from tsrsa.estimator.model_set import check_shared, named_models, panel_frame, rows_of
from tsrsa.estimator.params import check_choice, check_float, check_int, check_str
from tsrsa.estimator.protocol import Estimator, store_init_args
from tsrsa.forecasters.auto_candidates import (
    default_candidates, local, longer_look_backs, rebuilt_candidates, refit_kept, refit_unranked, validate_candidates,
    validation_windows,
)


class AutoForecaster(Estimator):
    """Choose, for each series, the candidate forecaster that did best on validation windows, and forecast.

    Validation (inside the training frame only): the last ``h + (n_windows - 1) * step_size`` steps of
    every series are the validation block; each candidate is fitted **once** on the frame without that
    block and forecasts ``n_windows`` windows of ``h`` steps, whose cutoffs are ``step_size`` apart (default
    ``h``: back-to-back windows; the candidates' own ``cross_validate(..., refit=False)``, so a statistical
    model runs its filter over the block with the parameters fitted before it and a network reads the
    windows with the weights trained before it). The metric is MASE: the mean absolute error over the
    windows' steps divided by the in-sample mean absolute seasonal difference (season ``season_length``,
    over the part before the block; :func:`tsrsa.estimator.model_choice.naive_scale`). Each series keeps
    the candidate of lowest MASE, or with ``combine`` the best ``top_k`` combined (those of them
    that the validation cannot tell apart from the best, with ``margin``; by default every such one, unless
    the last window shows the mean of each series' best 2, 3 or 4 to do better: ``combine="auto"``);
    ``choose="panel"`` ranks the candidates by their mean MASE over the series instead, and so does a
    series on which fewer than two candidates could be validated (too short for the others' look-back plus
    the block), and one whose own best is another candidate than the panel's best and does not beat it on
    the series by ``margin`` standard errors (``basis`` "panel" in ``choice_``). What is kept is then
    refitted once on the whole frame: a network (global) on every series long enough for it, a statistical
    model on the series that keep it. Cost: every candidate fitted once without the block, then the kept
    ones once more, so at most about twice the sum of the candidates' fits (the networks dominate; pass
    fewer or cheaper candidates to spend less). A network at its default look-back
    (``input_size=None``) takes the look-back the rule gives the median series, not the shortest; the shorter
    series are left to the other candidates instead of shortening it for all
    (:func:`tsrsa.forecasters.auto_candidates.held_look_back`). On integer time (a frequency that gives the
    look-back no season) the networks may take twice that look-back instead, where more than half of the series
    hold it with the block: a DLinear among them (the cheapest network) is validated at both, and every such
    network takes the one of DLinear's lower mean MASE (``look_backs_``: on M4 Weekly 26 weeks or 52).

    A candidate that fails on a series (too short for it, a fit that raises, a non-finite forecast) is
    skipped there and recorded (``failures_``), and the series keeps the next best; a series that no
    candidate forecasts is a ValueError.
    ``predict(level=[80])`` adds split-conformal intervals calibrated on the validation errors of what
    each series keeps (the combination's own errors, scaled by each series' MASE scale, pooled over series).

    Parameters
    ----------
    h : int
        Forecast horizon (steps); every candidate has it.
    models : list or dict, optional
        The candidates (forecasters, ``(name, forecaster)`` pairs or a dict, as ``MultiForecaster``'s). None:
        ``SeasonalNaive``, ``ETS``, ``ARIMA``, ``Theta``, ``RSA``, ``Transformer`` (RSA's twin with softmax
        attention; both with their statistical start) and ``DLinear``, at their defaults.
    season_length : int, optional
        The season of MASE's scale and of the default statistical candidates; None: the first natural
        period of the frequency (12 monthly, 4 quarterly, 24 hourly, ...), 1 where there is none.
    choose : {"series", "panel"}, default "series"
    combine : {"auto", "mean", "weighted", None}, default "auto"
        "mean": the mean of the best ``top_k`` candidates (those ``margin``'s gate lets join the best);
        "weighted": their mean weighted by inverse validation MASE; None: the best candidate alone. "auto": as
        "mean", unless the last validation window says that the mean of each series' best 2, 3 or 4 (ranked by
        its own errors, without the gate) does better: each rule chooses on the windows before the last, and one
        that beats the gate's choice on the last window by more than ``margin`` standard errors of their paired
        MASE over the series (read as Student's t: 2 needs 2.02 over 174 series, 2.9 over 5) is kept instead (of
        several, the lowest; ``rule_``, ``rules_``). It costs no fit.
        With one window, fewer than two series validated on two candidates, ``choose="panel"`` or
        ``margin=None``: "mean".
        The default since 0.19.6 (on M3's monthly and other series the means of the best 3 and 2 scored 1.5 %
        and 4.4 % lower MASE on a later block; elsewhere the gate stays; ``benchmarks/auto_rules.py``).
    top_k : int or None, default None
        The most candidates combined; None: every candidate that ``margin``'s gate lets join the best (all of
        them with ``margin=None``). With ``combine="auto"`` it caps the other rules too (``top_k=2``: the mean of
        the best 2 only).
    margin : float or None, default 2.0
        With ``choose="series"``: a series whose own best candidate is not the panel's best (lowest mean MASE
        over the series) keeps its own ranking only where its best beats the panel's on it by more than
        ``margin`` standard errors of their paired step errors over its validation windows
        (:func:`tsrsa.estimator.model_choice.within_noise`); elsewhere it ranks by the panel's means (``basis``
        "panel"): a few windows of a short series rarely tell candidates apart. A series whose own best is the
        panel's keeps its own ranking (since 0.19.3; before, it took the panel's, and a panel of one series
        combined every candidate). With ``combine`` (either ``choose``), a candidate joins a series' best only
        where the validation cannot tell the two apart by ``margin`` standard errors
        (:func:`tsrsa.estimator.model_choice.told_apart`; on a series ranked by its own errors, of their paired
        step errors there; on one ranked by the panel, of their paired MASE over the series): a combination
        does not dilute a candidate that validation shows to be better (the gate since 0.18.1). None: every
        series validated on two or more candidates ranks by its own errors and combines its best ``top_k``
        (the rule before 0.17). The defaults (the mean of every candidate that ``margin=2``'s gate cannot tell
        from the best, two windows; before 0.19.1 the best two at most) were chosen on a later block than the one
        the rules chose on, over eight regimes: M3's four subsets whole with every default candidate
        (``benchmarks/auto_m3_study.py``) and M4 Weekly and Hourly (``benchmarks/auto_m4_study.py``), ranked by
        ``benchmarks/auto_rules.py``; docs/multi.md says where they fall short of the best single model.
    n_windows : int, default 2
        Validation windows per series, at most: where no series is long enough to validate two candidates on
        that many, as many as leave some series two, else one (``n_windows_``); where even one leaves no series
        two, each series keeps the mean of the statistical candidates it can fit, unvalidated (``basis``
        "unranked", whatever ``combine``: nothing ranks a best). Since 0.19.5: before, one series of 40 or of
        26 months at h 18 was refused.
    step_size : int, optional
        Steps between validation cutoffs (default ``h``).
    n_jobs : int, optional
        Given to the default statistical candidates that take it (processes fitting their series).
    random_state : int, optional
        Seed of the default neural candidates (and of given candidates whose ``random_state`` is None):
        the same data and seed give the same choice and forecasts.
    freq, fill, id_col, time_col, target_col
        As every forecaster's (given to the default candidates).

    Attributes
    ----------
    choice_ : DataFrame
        One row per series: its id, each candidate's validation MASE (NaN where it failed or was too short
        to validate), ``kept`` (the names kept, "+"-joined, heaviest first), ``basis`` ("series": ranked by
        its own errors; "panel": by the panel's means; "unranked": see ``n_windows``) and ``failed`` (the
        candidates that failed on it).
    weights_ : DataFrame
        Series x candidates: the weight of each candidate in each series' forecast.
    failures_ : DataFrame
        id, candidate, stage ("validation" or "refit") and the error of each failure.
    models_ : dict
        name -> the refitted candidates that some series keeps.
    n_windows_ : int
        The validation windows the choice was made on (``n_windows``, or fewer for short series).
    unranked_ : bool
        Whether no series could rank two candidates (each kept the mean of the statistical ones it fits).
    rule_ : str or None
        With ``combine="auto"``: the rule the weights follow, "gate" or "best k" (None otherwise, and where
        nothing was ranked).
    rules_ : DataFrame
        With ``combine="auto"`` and two or more windows: each rule, its mean MASE on the last window (chosen on
        the earlier ones), by how many standard errors it beats the gate there, how many it needs (``margin`` as
        Student's t over the series compared: more over a few series) and whether it was kept.
    look_backs_ : DataFrame
        One row per network that could take twice its look-back (integer time, see above): ``input_size`` and
        ``longer`` (twice it), the mean validation MASE at each (``mase``, ``longer_mase``: DLinear's over the
        series both validated; another network's at the one it was validated at, NaN at the other) and the one
        ``kept``; empty where none could, or no DLinear was among them.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import tsrsa
    >>> y = pd.Series(np.sin(np.arange(48.0) * np.pi / 6) + 5, index=pd.RangeIndex(48))
    >>> auto = tsrsa.AutoForecaster(h=3, season_length=12, combine=None, models=[
    ...     ("yearly", tsrsa.SeasonalNaiveForecaster(h=3, season_length=12)),
    ...     ("last", tsrsa.SeasonalNaiveForecaster(h=3, season_length=1))]).fit(y)
    >>> auto.choice_[["unique_id", "kept", "basis"]].values.tolist()  # one series: ranked by its own windows
    [['y', 'yearly', 'series']]
    """

    #: a set of models: saved as a folder per model (:mod:`tsrsa.estimator.set_folder`)
    saves_members = True

    def __init__(self, h, *, models=None, season_length=None, choose="series", combine="auto", top_k=None, margin=2.0,
                 n_windows=2, step_size=None, n_jobs=None, random_state=None, freq=None, fill=None, id_col="unique_id",
                 time_col="ds", target_col="y"):
        store_init_args(self, locals())

    # ------------------------------------------------------------------ parameters, candidates
    def check_params(self) -> None:
        """ValueError/TypeError naming the fix (``fit`` runs it first)."""
        check_int("h", self.h)
        check_int("season_length", self.season_length, allow_none=True)
        check_choice("choose", self.choose, CHOOSE_BY)
        check_choice("combine", self.combine, COMBINE, allow_none=True)
        check_int("top_k", self.top_k, allow_none=True)
        check_float("margin", self.margin, allow_none=True)
        check_int("n_windows", self.n_windows)
        check_int("step_size", self.step_size, allow_none=True)
        check_int("n_jobs", self.n_jobs, minimum=-1, allow_none=True)
        for name in ("id_col", "time_col", "target_col"):
            check_str(name, getattr(self, name))

    @property
    def frame_spec(self) -> FrameSpec:
        return FrameSpec(self.id_col, self.time_col, self.target_col)

    def candidate_models(self) -> list[tuple[str, object]]:
        """The candidates as ``[(name, unfitted copy)]``, configured as ``fit`` uses them."""
        columns = {"id_col": self.id_col, "time_col": self.time_col, "target_col": self.target_col}
        if self.models is None:
            return default_candidates(self, columns)
        named = [(name, model.clone()) for name, model in named_models(self.models, type(self).__name__)]
        check_shared(named, type(self).__name__, h=self.h, columns=columns)
        for _, model in named:
            if self.random_state is not None and "random_state" in model.param_names() and model.random_state is None:
                model.set_params(random_state=self.random_state)
        return named

    def clone(self):
        """An unfitted copy with the same parameters."""
        return type(self)(**copy.deepcopy(self.get_params()))

    # ------------------------------------------------------------------ fit
    def fit(self, df):
        """Validate every candidate, keep the best per series, refit what is kept; returns self."""
        self.check_params()
        kind, df = frame_kind(df), to_pandas(df)  # polars or pyarrow: read as pandas, answered in kind
        panel = build_panel(df, self.frame_spec, freq=self.freq, fill=self.fill)
        frame = panel_frame(panel, self.frame_spec)
        h = int(self.h)
        step = int(self.step_size or h)
        given = self.candidate_models()
        named, needs, W = validation_windows(given, panel, frame, h, step, int(self.n_windows))
        block = h + (W - 1) * step
        names = [name for name, _ in named]
        ends = np.maximum(panel.lengths - block, 1)  # (S,) values before the validation block
        m = self.season_of(panel.freq)
        scale = naive_scale(panel, ends, m)
        record = ChoiceRecord(panel.ids, names, self.id_col)
        y = validation_targets(panel, ends, W, step, h)  # (S, W, h); meaningless where no candidate validated
        named, needs, yhat, look_backs = validate_candidates(
            named, needs, longer_look_backs(given, named, panel, frame, block), panel, frame, record, windows=W,
            step=step, h=h, y=y, scale=scale, id_col=self.id_col)
        errors = scaled_errors(yhat, y, scale)
        record.non_finite(errors, yhat)
        signed = (yhat - y[:, None]) / scale[:, None, None, None]  # (S, C, W, h) scaled step errors
        steps = np.abs(signed)
        unranked = bool(panel_rows(errors).all())  # every series validated fewer than two candidates
        combine, top_k, margin = self.combine, self._top_k(), self._margin()
        rule, rule_scores = None, []
        if combine == "auto":
            combine = "mean"
            if self.choose == "series" and margin is not None and not unranked:
                (rule, top_k, margin), rule_scores = last_window_rule(signed, panel.ids, names, top_k=top_k,
                                                                      margin=margin)
        by_panel = panel_rows(errors, self.choose)  # (S,) the series ranked by the panel's mean errors
        if margin is not None and self.choose == "series":
            by_panel = by_panel | within_noise(steps, errors, margin)
        least = np.array([need for need, _ in needs])[:, None]
        able = panel.lengths >= least  # (C, S) long enough to fit
        if unranked:  # no series ranks two candidates: the mean of the statistical ones each can fit
            statistical = np.array([local(model) for _, model in named])[:, None]
            keep = statistical & able & (np.isfinite(errors.T) | (panel.lengths < least + block))  # (C, S)
            models, weights = refit_unranked(named, frame, keep.T, record)
            default = (weights > 0).any(axis=0) / max(int((weights > 0).any(axis=0).sum()), 1)
        else:
            models, weights = refit_kept(named, frame, errors, steps, record, able, by_panel, choose=self.choose,
                                         combine=combine, top_k=top_k, margin=margin)
            default = panel_weights(errors, weights.sum(axis=0) > 0, combine=combine, top_k=top_k, margin=margin)
        residuals = np.abs(y - combined(weights, yhat)) / scale[:, None, None]  # (S, W, h)
        residuals = residuals.reshape(-1, h)
        residuals = residuals[np.isfinite(residuals).all(axis=1)]  # a series kept unvalidated has none
        self.models_ = models
        self.ids_, self.last_, self.freq_, self.season_length_ = panel.ids, pd.Index(panel.last), panel.freq, m
        self.names_, self.errors_, self.weight_array_, self.by_panel_ = names, errors, weights, by_panel
        self.n_windows_, self.unranked_, self.default_weights_ = W, unranked, default
        self.rule_, self.rule_scores_ = rule, rule_scores
        self.look_back_rows_ = look_backs
        self.scale_ = scale
        self.calibration_ = ConformalCalibration(residuals, scale)
        self.failure_rows_, self.frame_kind_ = record.rows, kind
        return self

    def _margin(self) -> float | None:
        return None if self.margin is None else float(self.margin)

    def _top_k(self) -> int | None:
        return None if self.top_k is None else int(self.top_k)

    # ------------------------------------------------------------------ results
    @property
    def choice_(self) -> pd.DataFrame:
        self.check_is_fitted()
        basis = np.where(self.by_panel_, "panel", "series") if not self.unranked_ else np.full(len(self.ids_),
                                                                                                "unranked")
        return ChoiceRecord.table(self.ids_, self.names_, self.errors_, self.weight_array_, self.failure_rows_,
                                  self.id_col, basis)

    @property
    def rules_(self) -> pd.DataFrame:
        self.check_is_fitted()
        table = pd.DataFrame(self.rule_scores_, columns=["rule", "last_window_mase", "beats_gate_by", "needed"])
        table["kept"] = table["rule"] == self.rule_
        return table

    @property
    def look_backs_(self) -> pd.DataFrame:
        """One row per network that could take twice its default look-back: both look-backs, the mean validation
        MASE at each (NaN where not validated) and the one kept (the class docstring)."""
        self.check_is_fitted()
        return pd.DataFrame(self.look_back_rows_, columns=["candidate", "input_size", "mase", "longer",
                                                           "longer_mase", "kept"])

    @property
    def weights_(self) -> pd.DataFrame:
        self.check_is_fitted()
        return pd.DataFrame(self.weight_array_, index=self.ids_, columns=self.names_)

    @property
    def failures_(self) -> pd.DataFrame:
        self.check_is_fitted()
        return pd.DataFrame(self.failure_rows_, columns=[self.id_col, "candidate", "stage", "error"])

    def season_of(self, freq) -> int:
        """The season in steps: ``season_length``, else the frequency's first natural period, else 1."""
        return season_steps(freq, self.season_length)

    def check_is_fitted(self) -> None:
        """NotFittedError unless ``fit`` (or ``tsrsa.load``) has run."""
        if not hasattr(self, "models_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(df) first.")

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "models_")

    # ------------------------------------------------------------------ predict, update
    def plot(self, df=None, *, forecast=None, ids=None, max_series: int = 4, history: int | None = None,
             level=None):
        """Recent history and the forecast (with ``level``, its intervals) of a few series, one panel each;
        returns a matplotlib Figure. ``df``: the history to draw and forecast from (as ``predict(df=...)``);
        default: what the candidate of largest weight in each series remembers from the fit. ``forecast``: a
        ``predict`` output to draw instead; ``ids``: the series (default the first ``max_series``);
        ``history``: past steps per series (default three horizons)."""
        from tsrsa.estimator.plotting import draw_forecasts, remembered

        self.check_is_fitted()
        frame = to_pandas(df)
        forecast = to_pandas(self.predict(df=frame, level=level) if forecast is None else forecast)
        shown = list(forecast[self.id_col].drop_duplicates()[:max_series]) if ids is None else list(ids)
        missing = [sid for sid in shown if sid not in set(forecast[self.id_col])]
        if missing:
            raise ValueError(f"ids {missing} are not among the forecast series")
        n = int(history) if history is not None else 3 * int(self.h)
        histories = {}
        for sid in shown:
            if frame is not None:
                rows = frame[frame[self.id_col] == sid].sort_values(self.time_col).tail(n)
                histories[sid] = (rows[self.time_col].to_numpy(), rows[self.target_col].to_numpy(dtype=float))
            else:
                heaviest = self.names_[int(np.argmax(self.weight_array_[self.ids_.get_loc(sid)]))]
                histories[sid] = remembered(self.models_[heaviest], sid, n)
        return draw_forecasts(histories, forecast, self.frame_spec)

    def predict(self, h: int | None = None, *, df=None, future_df=None, level=None) -> pd.DataFrame:
        """Forecast every series with what it keeps: id, time, ``yhat`` (and ``yhat_lo_{level}``,
        ``yhat_hi_{level}`` with ``level``). ``df``: forecast after the end of each series in it; an id not
        seen in fit takes the candidates best on average over the panel among those fitted (a statistical
        one is fitted on that series' history)."""
        self.check_is_fitted()
        if future_df is not None:
            raise ValueError("AutoForecaster's candidates read no covariates; leave future_df out")
        h = requested_horizon(h, int(self.h), f"refit with h={h} or forecast at most {self.h} steps")
        levels = check_levels(level)
        kind, df = self.frame_kind_ if df is None else frame_kind(df), to_pandas(df)
        if df is None:
            ids, last, weights, scale, frame = self.ids_, self.last_, self.weight_array_, self.scale_, None
        else:
            panel = build_panel(df, self.frame_spec, freq=self.freq, fill=self.fill, expected_freq=self.freq_)
            frame, ids, last = panel_frame(panel, self.frame_spec), panel.ids, pd.Index(panel.last)
            weights = self._weights_for(ids)
            scale = naive_scale(panel, panel.lengths, self.season_length_)
        yhat = np.zeros((len(ids), h))
        for c, name in enumerate(self.names_):
            use = weights[:, c] > 0
            if not use.any():
                continue
            model = self.models_[name]
            given = None if frame is None else (rows_of(frame, ids[use], self.id_col) if local(model) else frame)
            out = model.predict(h, df=given)
            rows = ids.get_indexer(out[self.id_col].to_numpy()[::h])
            keep = weights[rows, c] > 0
            yhat[rows[keep]] += weights[rows[keep], c, None] * out["yhat"].to_numpy().reshape(-1, h)[keep]
        columns = {"yhat": yhat}
        if levels:
            n = len(self.calibration_.residuals)
            if not n:
                raise ValueError(f"level={max(levels):g}: no forecast this fit keeps was validated (the series are too "
                                 f"short for a validation window beside the candidates' fits), so there are no "
                                 f"errors to calibrate intervals on; leave level out, or fit longer series")
            try:
                check_enough(levels, n, len(self.scale_))
            except ValueError:
                windows = windows_needed(max(levels), Fraction(n, self.n_windows_))
                raise ValueError(f"level={max(levels):g} needs more validation windows than the {n} this fit scored "
                                 f"({len(self.scale_)} series x {self.n_windows_} window(s)): refit with "
                                 f"n_windows={windows} or more, or ask for a lower level") from None
            columns.update(self.calibration_.intervals(yhat, scale, levels))
        return as_kind(forecast_frame(ids, self.freq_.future(last, h), columns, self.frame_spec), kind)

    def _weights_for(self, ids) -> np.ndarray:
        known = self.ids_.get_indexer(ids)
        weights = np.tile(self.default_weights_, (len(ids), 1))
        weights[known >= 0] = self.weight_array_[known[known >= 0]]
        return weights


    def update(self, df, *, new_ids: str = "raise"):
        """Take in observations that continue each series, no refit (each kept model's ``update``); returns
        self. ``new_ids="add"`` takes in unseen ids with the candidates best on average over the panel. All
        or nothing."""
        self.check_is_fitted()
        check_choice("new_ids", new_ids, ("raise", "add"))
        panel = build_panel(to_pandas(df), self.frame_spec, freq=self.freq, fill=self.fill, expected_freq=self.freq_)
        known = self.ids_.get_indexer(panel.ids)
        check_continuation(panel, self.last_, known, new_ids=new_ids)
        frame = panel_frame(panel, self.frame_spec)
        weights = self._weights_for(panel.ids)
        models = {}
        for c, name in enumerate(self.names_):
            if name not in self.models_:
                continue
            model = copy.deepcopy(self.models_[name])
            given = rows_of(frame, panel.ids[weights[:, c] > 0], self.id_col) if local(model) else frame
            if len(given):
                model.update(given, new_ids=new_ids)
            models[name] = model
        new = known < 0
        ids = self.ids_.append(panel.ids[new])
        last = list(self.last_.append(pd.Index(panel.last)[new]))
        for position, stamp in zip(ids.get_indexer(panel.ids), pd.Index(panel.last)):
            last[position] = stamp
        self.models_, self.ids_, self.last_ = models, ids, pd.Index(last, dtype=self.last_.dtype)
        if new.any():
            self.weight_array_ = np.vstack([self.weight_array_, weights[new]])
            self.errors_ = np.vstack([self.errors_, np.full((int(new.sum()), len(self.names_)), np.nan)])
            self.by_panel_ = np.concatenate([self.by_panel_, np.ones(int(new.sum()), dtype=bool)])
            self.scale_ = np.concatenate([self.scale_, naive_scale(panel.take(np.flatnonzero(new)),
                                                                   panel.lengths[new], self.season_length_)])
            self.calibration_ = ConformalCalibration(self.calibration_.residuals, self.scale_)
        return self

    # ------------------------------------------------------------------ evaluation, saving
    def cross_validate(self, df, *, n_windows: int = 3, step_size: int | None = None, refit=True,
                       level=None) -> pd.DataFrame:
        """Rolling-origin evaluation of the whole procedure over the last ``n_windows`` cutoffs of every series
        (``step_size`` apart, default ``h``); this model is left as it is.

        ``refit=True`` (the default): at each cutoff a copy chooses and refits on the data up to the cutoff
        only; ``refit=False``: one copy, chosen and fitted on the data up to the first cutoff, forecasts every
        window from the history up to its cutoff (``predict(df=...)``: the choice and the fitted parameters
        kept, each kept model's state run over the newer values); ``refit=k``: a new choice every k cutoffs.
        ``level=[80]`` adds each window's intervals as ``predict(level=...)`` gives them (calibrated on the
        validation errors of the copy that forecasts it). Returns id, time, ``cutoff``, ``step``, the actual
        value, ``yhat`` (and ``yhat_lo_{level}``, ``yhat_hi_{level}``)."""
        from tsrsa.estimator.crossval import cutoff_positions

        self.check_params()
        check_int("n_windows", n_windows)
        check_int("step_size", step_size, allow_none=True)
        if isinstance(refit, (bool, np.bool_)):
            per_fit = 1 if refit else n_windows  # windows forecast by one choice
        elif isinstance(refit, (int, np.integer)):
            check_int("refit", refit, minimum=0)
            per_fit = n_windows if refit == 0 else int(refit)
        else:
            raise TypeError(f"refit={refit!r}: give True (a new choice at every cutoff), False (one choice at "
                            f"the first cutoff) or an int k (a new choice every k cutoffs)")
        check_levels(level)
        kind, df = frame_kind(df), to_pandas(df)
        panel = build_panel(df, self.frame_spec, freq=self.freq, fill=self.fill)
        h = int(self.h)
        cutoffs = cutoff_positions(panel.lengths, h, n_windows, int(step_size or h))  # (S, W)
        if (cutoffs < 1).any():
            raise ValueError(f"cross_validate(n_windows={n_windows}) leaves a series without history before its "
                             f"first cutoff; lower n_windows or step_size")
        parts, model = [], None
        for w in range(n_windows):
            head = panel.head(cutoffs[:, w] + 1)
            frame = panel_frame(head, self.frame_spec)
            if w % per_fit == 0:
                model = self.clone().fit(frame)
                out = model.predict(level=level)
            else:
                out = model.predict(df=frame, level=level)
            out = to_pandas(out)
            out.insert(2, "cutoff", np.repeat(np.asarray(pd.Index(head.last)), h))
            out.insert(3, "step", np.tile(np.arange(1, h + 1), panel.n_series))
            targets = (panel.offsets[:-1] + cutoffs[:, w])[:, None] + np.arange(1, h + 1)[None, :]
            out.insert(4, self.target_col, panel.values[targets].ravel())
            out["_order"] = np.repeat(np.arange(panel.n_series) * n_windows + w, h)
            parts.append(out)
        result = pd.concat(parts, ignore_index=True).sort_values(["_order", "step"], kind="stable")
        return as_kind(result.drop(columns="_order").reset_index(drop=True), kind)

    def save(self, path, *, overwrite: bool = False) -> None:
        """Write the fitted models and the choice to the folder ``path`` (:mod:`tsrsa.estimator.set_folder`);
        ``tsrsa.load(path)`` reads it back. All or nothing."""
        from tsrsa.estimator.set_folder import save_set

        self.check_is_fitted()
        params = {k: v for k, v in self.get_params().items() if k != "models"}
        params["models"] = None if self.models is None else candidate_specs(
            named_models(self.models, type(self).__name__))
        state = ChoiceRecord.to_state(self)
        save_set(self, path, members=list(self.models_.items()), params=params, state=state, overwrite=overwrite)

    @classmethod
    def from_folder(cls, directory, config: dict, load_member):
        """The AutoForecaster saved in ``directory`` (``tsrsa.load``)."""
        from tsrsa.estimator.set_folder import read_set

        params, members, state = read_set(directory, config, load_member)
        try:
            params = dict(params)
            params.setdefault("margin", None)  # saved before the margin existed: chosen without one
            params["models"] = None if params.get("models") is None else rebuilt_candidates(params["models"])
            model = cls(**params)
            model.models_ = dict(members)
            ChoiceRecord.from_state(model, state)
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise ValueError(f"{directory} does not describe a fitted {cls.__name__} ({err})") from err
        return model
