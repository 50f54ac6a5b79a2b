"""MultiForecaster: several forecasters fitted on one frame, their forecasts side by side."""
from __future__ import annotations

import copy

import pandas as pd

from tsrsa.data.native import PANDAS, as_kind, frame_kind, to_pandas
from tsrsa.estimator.model_set import check_shared, named_models, side_by_side
from tsrsa.estimator.protocol import Estimator, store_init_args


class MultiForecaster(Estimator):
    """Fit several forecasters on the same frame and forecast with all of them, one column per model.

    Each model keeps its own parameters (statistical and neural alike); ``fit`` fits a copy of each (the
    models passed in are left as they are), each as it fits alone, so every column equals the forecast
    of that model fitted by itself on the frame. A statistical model's own ``n_jobs`` (where it has one)
    says how many processes fit its series; the set adds no parallelism of its own.

    Parameters
    ----------
    models : list, or dict
        The forecasters: a list of forecasters (each named after its class without "Forecaster":
        ``ETS``, ``RSA``, ``SeasonalNaive``), a list of ``(name, forecaster)`` pairs, or a dict
        name -> forecaster. Names are unique (two models of one class need names of their own); every
        model has the same ``h`` and the same ``id_col``, ``time_col`` and ``target_col``.

    Attributes
    ----------
    models_ : dict
        name -> the fitted copy of each model.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import tsrsa
    >>> y = pd.Series(np.sin(np.arange(48.0) * np.pi / 6) + 5, index=pd.RangeIndex(48))
    >>> m = tsrsa.MultiForecaster([tsrsa.SeasonalNaiveForecaster(h=3, season_length=12),
    ...                            ("Naive1", tsrsa.SeasonalNaiveForecaster(h=3, season_length=1))]).fit(y)
    >>> list(m.predict().columns)
    ['unique_id', 'ds', 'SeasonalNaive', 'Naive1']
    """

    #: a set of models: saved as a folder per model (:mod:`tsrsa.estimator.set_folder`)
    saves_members = True

    def __init__(self, models):
        store_init_args(self, locals())

    # ------------------------------------------------------------------ what the models share
    def _named(self) -> list[tuple[str, object]]:
        named = named_models(self.models, type(self).__name__)
        check_shared(named, type(self).__name__)
        return named

    @property
    def h(self) -> int:
        """The horizon every model forecasts."""
        return self._first().h

    def _first(self):
        if hasattr(self, "models_"):
            return next(iter(self.models_.values()))
        return self._named()[0][1]

    @property
    def id_col(self) -> str:
        return self._first().id_col

    @property
    def time_col(self) -> str:
        return self._first().time_col

    @property
    def target_col(self) -> str:
        return self._first().target_col

    def check_is_fitted(self) -> None:
        """NotFittedError unless ``fit`` (or ``tsrsa.load``) has run."""
        if not hasattr(self, "models_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(df) first.")

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "models_")

    def clone(self):
        """An unfitted copy with copies of the same models."""
        return type(self)(models=[(name, model.clone()) for name, model in self._named()])

    # ------------------------------------------------------------------ fit, predict
    def fit(self, df):
        """Fit a copy of every model on ``df``; returns self. All or nothing: when one model's fit raises,
        the error names it and this set is left as it was."""
        fitted, kind, df = {}, frame_kind(df), to_pandas(df)  # polars or pyarrow: read as pandas, answered in kind
        for name, model in self._named():
            fitted[name] = _named_call(name, lambda m=model.clone(): m.fit(df))
        self.models_, self.frame_kind_ = fitted, kind
        return self

    def predict(self, h: int | None = None, *, df=None, future_df=None, level=None) -> pd.DataFrame:
        """Forecast with every model: id, time, then one column per model (its name), each model's quantile
        and interval columns under its name (``RSA_q10``; ``RSA_lo_80``, ``RSA_hi_80`` with ``level=[80]``,
        for models fitted with ``conformal_windows``). ``h``, ``df``, ``future_df`` and ``level`` are each
        model's ``predict`` arguments (``future_df`` goes to the models that declare future covariates)."""
        self.check_is_fitted()
        kind, df, future_df, frames = self.frame_kind_ if df is None else frame_kind(df), to_pandas(df), \
            to_pandas(future_df), []
        for name, model in self.models_.items():
            extra = {"future_df": future_df} if future_df is not None and model.declared_covariates().future else {}
            frames.append((name, _named_call(name, lambda m=model: m.predict(h, df=df, level=level, **extra))))
        return as_kind(side_by_side(frames, [self.id_col, self.time_col]), kind)

    def cross_validate(self, df, *, n_windows: int = 3, step_size: int | None = None, refit=False,
                       level=None) -> pd.DataFrame:
        """Every model's ``cross_validate`` over the same cutoffs: id, time, ``cutoff``, ``step``, the actual
        value, then one column per model (and its quantile and interval columns). The arguments are each
        model's (see :meth:`tsrsa.estimator.base.BaseForecaster.cross_validate`); this set is left as it is."""
        kind, df = frame_kind(df), to_pandas(df)
        frames = [(name, _named_call(name, lambda m=model: m.cross_validate(
            df, n_windows=n_windows, step_size=step_size, refit=refit, level=level)))
            for name, model in self._named()]
        return as_kind(side_by_side(frames, [self.id_col, self.time_col, "cutoff", "step", self.target_col]), kind)

    def update(self, df, *, new_ids: str = "raise"):
        """Every model's ``update(df, new_ids=...)`` (new observations, no refit); returns self. All or
        nothing: when one model refuses, none is changed."""
        self.check_is_fitted()
        df = to_pandas(df)
        updated = {name: _named_call(name, lambda m=copy.deepcopy(model): m.update(df, new_ids=new_ids))
                   for name, model in self.models_.items()}
        self.models_ = updated
        return self

    def plot(self, df=None, *, ids=None, max_series: int = 4, history: int | None = None, level=None):
        """Recent history and every model's forecast, one panel per series; returns a matplotlib Figure.

        The first model's plot (its bands, with ``level`` its intervals) with each other model's
        forecast drawn over it, one line and one legend entry per model."""
        df = to_pandas(df)
        forecast = to_pandas(self.predict(df=df, level=level))
        names = list(self.models_)
        first = self.models_[names[0]]
        spec = [self.id_col, self.time_col]
        own = forecast[spec + [c for c in forecast.columns if c == names[0] or c.startswith(names[0] + "_")]]
        own = own.rename(columns={c: "yhat" + c[len(names[0]):] for c in own.columns if c not in spec})
        fig = first.plot(df, forecast=own, ids=ids, max_series=max_series, history=history)
        shown = list(own[self.id_col].drop_duplicates()[:max_series]) if ids is None else list(ids)
        for ax, sid in zip(fig.axes, shown):
            ax.lines[-1].set_label(names[0])
            rows = forecast[forecast[self.id_col] == sid]
            for k, name in enumerate(names[1:], start=1):
                ax.plot(rows[self.time_col].to_numpy(), rows[name], color=f"C{k}", lw=1.4, label=name)
        fig.axes[0].legend(loc="upper left", fontsize=8)
        return fig

    # ------------------------------------------------------------------ saving
    def save(self, path, *, overwrite: bool = False) -> None:
        """Write every fitted model to the folder ``path``, each in a folder of its own, with a manifest
        (:mod:`tsrsa.estimator.set_folder`); ``tsrsa.load(path)`` reads it back. All or nothing."""
        from tsrsa.estimator.set_folder import save_set

        self.check_is_fitted()
        state = {} if self.frame_kind_ == PANDAS else {"frame_kind": self.frame_kind_}
        save_set(self, path, members=list(self.models_.items()), params={}, state=state, overwrite=overwrite)

    @classmethod
    def from_folder(cls, directory, config: dict, load_member):
        """The set saved in ``directory`` (``tsrsa.load``; :func:`tsrsa.estimator.set_folder.read_set`)."""
        from tsrsa.estimator.set_folder import read_set

        _, members, state = read_set(directory, config, load_member)
        named = named_models(members, cls.__name__)
        check_shared(named, cls.__name__)
        model = cls(models=[(name, member.clone()) for name, member in named])
        model.models_, model.frame_kind_ = dict(named), state.get("frame_kind", PANDAS)
        return model


def _named_call(name: str, call):
    """``call()``, its ValueError or TypeError saying which model raised it."""
    try:
        return call()
    except (ValueError, TypeError) as err:
        raise type(err)(f"model {name!r}: {err}") from err

