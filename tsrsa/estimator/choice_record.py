"""What an AutoForecaster records of its choice: each candidate's attempts and failures, the choice table,
and the JSON a saved one keeps of it.

``ChoiceRecord.attempt`` runs one call of a candidate (its validation, or its refit) on some series of the
frame: once on all of them and, when that raises for a candidate that fits each series on its own (a
statistical one), again series by series to skip only those that fail, each failure recorded (id,
candidate, stage, error); a network, fitted once for the whole panel, fails for every series it was given.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.data.index_encoding import decode_index, decode_times, encode_index, encode_times, jsonable
from tsrsa.data.frequency import Frequency
from tsrsa.estimator.conformal import ConformalCalibration
from tsrsa.estimator.model_choice import panel_rows
from tsrsa.estimator.model_set import rows_of

#: the most characters of a candidate's error message that a record keeps
MESSAGE_LIMIT = 300


def _message(err: BaseException) -> str:
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text[:MESSAGE_LIMIT]


class ChoiceRecord:
    """The candidates' failures on the series ``ids`` (module docstring)."""

    def __init__(self, ids: pd.Index, names: list[str], id_col: str):
        self.ids, self.names, self.id_col = ids, names, id_col
        self.rows: list[list] = []  # [id, candidate, stage, error]

    def fail(self, rows, c: int, stage: str, err) -> None:
        message = err if isinstance(err, str) else _message(err)
        self.rows.extend([self.ids[i], self.names[c], stage, message] for i in rows)

    def reasons(self, i: int) -> dict[str, str]:
        """{candidate: its last recorded error} on series ``i``."""
        return {name: error for sid, name, _, error in self.rows if sid == self.ids[i]}

    def too_short(self, c: int, lengths: np.ndarray, need: int, why: str | None, block: int) -> None:
        """Record the series shorter than ``need`` observations (``why``: the candidate's reason; None when it
        could not say) plus the validation ``block`` as too short to validate candidate ``c``."""
        if why is None:  # the attempt itself will say what is wrong
            return
        short = np.flatnonzero(lengths < need + block)
        self.fail(short, c, "validation", f"too short to validate: {why} needs {need} observations, and the "
                                          f"validation block {block} more")

    def attempt(self, c: int, model, frame: pd.DataFrame, call, *, rows=None, stage: str = "validation") -> list:
        """``[(series rows, call(copy of model, their frame))]``: one result for every series of ``rows``
        (default all), or, when that raises for a model that fits each series alone, one per series that
        succeeds (``stage="refit"``: one result for all of those together); failures recorded."""
        rows = list(range(len(self.ids))) if rows is None else list(rows)
        sub = frame if len(rows) == len(self.ids) else rows_of(frame, self.ids[rows], self.id_col)
        try:
            return [(rows, call(model.clone(), sub))]
        except Exception as err:  # a candidate's failure of any kind is recorded, never fatal
            if type(model).stochastic or len(rows) == 1:
                self.fail(rows, c, stage, err)
                return []
        done = []
        for i in rows:
            try:
                done.append(([i], call(model.clone(), rows_of(frame, self.ids[[i]], self.id_col))))
            except Exception as err:
                self.fail([i], c, stage, err)
        if stage != "refit" or len(done) <= 1:
            return done
        good = [i for part, _ in done for i in part]
        try:
            return [(good, call(model.clone(), rows_of(frame, self.ids[good], self.id_col)))]
        except Exception as err:
            self.fail(good, c, stage, err)
            return []

    def non_finite(self, errors: np.ndarray, yhat: np.ndarray) -> None:
        """Record the (series, candidate) pairs without a validation error that no failure explains: their
        forecasts were not finite."""
        failed = {(row[0], row[1]) for row in self.rows}
        for i, c in zip(*np.nonzero(~np.isfinite(errors))):
            if (self.ids[i], self.names[c]) not in failed:
                self.fail([i], c, "validation", "non-finite validation forecast")

    # ------------------------------------------------------------------ the table
    @staticmethod
    def table(ids, names, errors, weights, rows, id_col: str, basis) -> pd.DataFrame:
        """One row per series: id, each candidate's validation MASE, ``kept``, ``basis`` (whether the series
        chose by its own errors, "series", by the panel's means, "panel", or kept the mean of the statistical
        candidates it fits where no series could rank two, "unranked") and ``failed``."""
        out = pd.DataFrame(errors, columns=names)
        out.insert(0, id_col, ids)
        order = np.argsort(-weights, axis=1, kind="stable")
        out["kept"] = ["+".join(names[c] for c in order[i] if weights[i, c] > 0) for i in range(len(ids))]
        out["basis"] = basis
        failed: dict = {}
        for sid, name, _, _ in rows:
            failed.setdefault(sid, [])
            if name not in failed[sid]:
                failed[sid].append(name)
        out["failed"] = ["+".join(failed.get(sid, [])) for sid in ids]
        return out

    # ------------------------------------------------------------------ saving
    @staticmethod
    def to_state(auto) -> dict:
        """The JSON a saved AutoForecaster keeps of its fit."""
        def array(values):
            return [[None if not np.isfinite(v) else float(v) for v in row] for row in np.atleast_2d(values)]

        return {
            "ids": encode_index(auto.ids_), "last": encode_times(pd.Index(auto.last_)), "freq": auto.freq_.to_json(),
            "season_length": int(auto.season_length_), "names": list(auto.names_), "errors": array(auto.errors_),
            "weights": array(auto.weight_array_), "default_weights": array(auto.default_weights_)[0],
            "scale": array(auto.scale_)[0], "residuals": array(auto.calibration_.residuals),
            "by_panel": [bool(v) for v in auto.by_panel_], "n_windows": int(auto.n_windows_),
            "unranked": bool(auto.unranked_), "rule": auto.rule_,
            "look_backs": [[name, int(L), None if not np.isfinite(e) else float(e), int(L2),
                            None if not np.isfinite(e2) else float(e2), int(kept)]
                           for name, L, e, L2, e2, kept in auto.look_back_rows_],
            "rule_scores": [[name, *(None if not np.isfinite(v) else float(v) for v in values)]
                            for name, *values in auto.rule_scores_],
            "failures": [[jsonable(sid, "series id"), name, stage, error]
                         for sid, name, stage, error in auto.failure_rows_],
            **({} if auto.frame_kind_ == "pandas" else {"frame_kind": auto.frame_kind_}),
        }

    @staticmethod
    def from_state(auto, state: dict) -> None:
        """Set ``auto``'s fitted attributes from what ``to_state`` wrote (``tsrsa.load``)."""
        def array(values):
            return np.array([[np.nan if v is None else float(v) for v in row] for row in values], dtype=np.float64)

        auto.ids_ = decode_index(state["ids"])
        auto.last_ = decode_times(state["last"])
        auto.freq_ = Frequency.from_json(state["freq"])
        auto.season_length_ = int(state["season_length"])
        auto.names_ = [str(name) for name in state["names"]]
        auto.errors_, auto.weight_array_ = array(state["errors"]), array(state["weights"])
        auto.default_weights_ = array([state["default_weights"]])[0]
        auto.scale_ = array([state["scale"]])[0]
        auto.frame_kind_ = state.get("frame_kind", "pandas")
        auto.calibration_ = ConformalCalibration(array(state["residuals"]), auto.scale_)
        auto.failure_rows_ = [list(row) for row in state["failures"]]
        auto.n_windows_ = int(state.get("n_windows", auto.n_windows))  # saved before 0.19.5: always n_windows
        auto.unranked_ = bool(state.get("unranked", False))  # and ranked
        auto.rule_ = state.get("rule")  # saved before 0.19.6: no rule chosen
        auto.look_back_rows_ = [[str(name), int(L), np.nan if e is None else float(e), int(L2),  # before 0.20: none
                                 np.nan if e2 is None else float(e2), int(kept)]
                                for name, L, e, L2, e2, kept in state.get("look_backs", [])]
        auto.rule_scores_ = [[str(name), *(np.nan if v is None else float(v) for v in values)]
                             for name, *values in state.get("rule_scores", [])]
        by_panel = state.get("by_panel")  # saved before the margin existed: the rule of that release
        auto.by_panel_ = panel_rows(auto.errors_, auto.choose) if by_panel is None else np.array(
            [bool(v) for v in by_panel], dtype=bool)
        S, C = len(auto.ids_), len(auto.names_)
        if auto.errors_.shape != (S, C) or auto.weight_array_.shape != (S, C) or auto.scale_.shape != (S,) \
                or len(auto.last_) != S or auto.default_weights_.shape != (C,) or auto.by_panel_.shape != (S,):
            raise ValueError("the choice's arrays do not match its series and candidates")
        used = {auto.names_[c] for c in np.flatnonzero((auto.weight_array_ > 0).any(axis=0)
                                                         | (auto.default_weights_ > 0))}
        if used != set(auto.models_):
            raise ValueError(f"the saved models {sorted(auto.models_)} are not the candidates kept {sorted(used)}")


def required_length(model, frame: pd.DataFrame) -> tuple[int, str | None]:
    """(the observations ``model`` needs to fit a series of ``frame``, its reason): its ``required_length``;
    (1, None) when it cannot say."""
    try:
        probe = model.clone()
        probe.check_params()
        need, why = probe.required_length(probe.to_panel(frame))
    except Exception:  # the attempt itself will say what is wrong
        return 1, None
    return int(need), why


def candidate_specs(named) -> list[dict]:
    """The candidates ``[(name, model)]`` as JSON: name, class name and parameters (as a saved model's)."""
    from tsrsa.estimator.persistence import saved_param

    return [{"name": name, "class": type(model).__name__,
             "params": {k: jsonable(saved_param(k, v, type(model)), k) for k, v in model.get_params().items()}}
            for name, model in named]
