"""The option groups every neural forecaster shares beside :class:`~tsrsa.estimator.trainer.Trainer`:
:class:`Start` (the statistical start, ``start=``) and :class:`Covariates` (``covariates=``).

Each is a frozen dataclass (or a dict of its fields) checked field by field when made
(:mod:`tsrsa.estimator.option_groups`); the estimator keeps the value as given and reads it resolved.
"""
from __future__ import annotations

from dataclasses import dataclass

from tsrsa.data.calendar import CALENDAR_FEATURES
from tsrsa.data.covariates import UNKNOWN_POLICIES, column_names
from tsrsa.estimator.option_groups import OptionGroup
from tsrsa.estimator.params import check_choice, check_float, check_int
from tsrsa.start.fit import START_MODELS
from tsrsa.training.budget import AUTO


@dataclass(frozen=True, repr=False)
class Start(OptionGroup):
    """The statistical start of a neural forecaster: ``start=`` (a kind's name alone, ``start="ar"``, is
    ``Start(kind="ar")``; ``start=None`` is ``Start(kind=None)``, no start).

    The network's forecast is a fitted statistical model's point forecast plus the network's
    correction, which starts at zero, so that the untrained model forecasts as the statistical one and
    training moves away from it only where the data say so (docs/statistical_start.md).

    Parameters
    ----------
    kind : {"ar", "ets", "arima", "auto"} or None, default "auto"
        "ar": an autoregression on levels or first differences (pooled over the series, order by
        AIC); "ets": additive exponential smoothing; "arima": a seasonal ARIMA with automatic orders
        (per series); "auto": the candidates "ar" and "ets", and "arima" too for one series when
        ``max_epochs`` is "auto" and the training windows are fewer than 2,000 (a short series, as for
        ``ensemble_size``), keeping the one with the lowest error on the validation windows (on the
        training parts' last windows when ``val_size=0``). Each is written as a linear map of the
        scaled window (:mod:`tsrsa.start.fit`; fitted as ``start_``). A named model refuses
        ``stream=True`` and a distribution loss; "auto" fits no start there (``start_`` is None). None:
        the network alone. The default, "auto", was chosen on validation over long-horizon data, a
        panel of many series and short series, and its candidates on nested validation
        (docs/benchmark_configuration.md; docs/statistical_start.md).
    weight : float in [0, 1] or "auto", default "auto"
        The start's weight in the forecast: the trained network's forecast ``S + C`` (the start plus
        the network's correction) becomes ``S + (1 - weight) C``, a combination of the two forecasts,
        made by scaling the network's output layers once training ends (``start_["start_weight"]``
        records it; a fine-tune keeps its source's). 0: the network as trained; 1: the start alone.
        "auto": 0.5 when ``max_epochs`` is "auto" and the training windows are fewer than 2,000 (a
        short series, where the correction is chosen on a few validation windows), else 0; chosen on
        nested validation over the short series (docs/statistical_start.md, "A combination of start
        and network"). A quantile loss learns its levels' spread in the correction: "auto" gives it 0
        and a weight above 0 is refused.
    margin : float, default 0.0
        With validation data, the trained network replaces the start only when its validation loss
        beats the start's by more than this many standard errors of the mean per-window difference
        (Newey-West, lag ``h - 1``: the windows overlap); otherwise the fit goes back to the start
        (``best_epoch_`` 0) and ``start_["edge"]`` records the network's edge. 0: the best validation
        epoch, the start counting as epoch 0. A margin of 2 was screened on nested validation and not
        made the default (docs/statistical_start.md, "When the network replaces the start").
    learning_rate : float, default 0.0
        The start's own learning rate; 0 keeps it as fitted.

    Examples
    --------
    >>> from tsrsa import Start
    >>> Start(kind="ar", weight=0.5)
    Start(kind='ar', weight=0.5)
    >>> Start(weight=2)
    Traceback (most recent call last):
    ...
    ValueError: Start: weight=2 must be <= 1.0
    """

    kind: str | None = AUTO  # "ar", "ets", "arima", "auto" or None (no start)
    weight: float | str = AUTO  # the start's weight in the trained forecast, or "auto"
    margin: float = 0.0  # standard errors the network must beat the start by on validation
    learning_rate: float = 0.0  # the start's own step size (0: kept as fitted)

    def check(self) -> None:
        check_choice("kind", self.kind, START_MODELS, allow_none=True)
        weight = self.weight
        if not (isinstance(weight, str) and weight == AUTO):
            if isinstance(weight, str):
                raise ValueError(f'weight={weight!r} is not supported; use "auto" or a number in [0, 1]')
            check_float("weight", weight, maximum=1.0)
        check_float("margin", self.margin)
        check_float("learning_rate", self.learning_rate)

    @classmethod
    def shorthand(cls, value) -> dict | None:
        """A kind's name or None (``start="ar"``, ``start=None``) stands for that kind with the other defaults."""
        if value is None:
            return {"kind": None}
        if isinstance(value, str):
            return {} if value == AUTO else {"kind": value}
        return None

    @classmethod
    def own_field(cls) -> str:
        return "kind"

    @classmethod
    def example(cls) -> str:
        return 'tsrsa.Start(kind="ar", weight=0.5) or start="ar"'

    @classmethod
    def coerce(cls, value, what: str):
        if isinstance(value, str) and value != AUTO and value not in START_MODELS:
            check_choice(what, value, START_MODELS, allow_none=True)  # start="x": the message names start
        return super().coerce(value, what)


@dataclass(frozen=True, repr=False)
class Covariates(OptionGroup):
    """The covariates a neural forecaster reads beside the target: ``covariates=`` (docs/covariates.md).

    Columns are named as they are in a long frame; each kind is a column name or a list of them.

    Parameters
    ----------
    past : list of str, optional
        Columns known up to each series' end. Numeric, or categorical (pandas ``category`` or
        strings: one indicator per category).
    future : list of str, optional
        Columns known for the horizon too: ``predict(future_df=...)`` gives their next ``h`` values.
    static : list of str, optional
        Columns holding one value per series (the id column itself may be one: an embedding per
        series); numeric or categorical (an embedding).
    calendar : "auto" or list of str, optional
        Calendar features generated from the timestamps as known-future covariates ("auto": every
        cycle the frequency resolves; names from ``tsrsa.data.CALENDAR_FEATURES``).
    holidays : str, optional
        A country code of the ``holidays`` package (``pip install tsrsa[calendar]``): a public-holiday
        flag as a known-future covariate.
    unknown_categories : {"raise", "unknown"}, default "raise"
        A category not seen in fit: an error, or an "unknown" bucket.
    norm : {"window", "fit"}, optional
        How numeric covariates are scaled over the look-back: "window", by their own mean and spread
        in each window (as RevIN does for the target), so that a driver whose level shifts after
        training does not move the forecast; "fit", by the training part's statistics alone. The
        horizon's known-future values keep the training part's scaling either way. None: "window",
        or "fit" in the streaming configuration (which has no window). Chosen on validation in
        ``benchmarks/covariates.py``.
    cycle : int or "auto", optional
        A learned cycle of this many steps per series, read at each step's position in it (from its
        timestamp), removed from every window before the network reads it and added back to the forecast
        (CycleNet's residual cycle, :mod:`tsrsa.nn.cycle`); "auto": the seasonal period the panel's
        estimate ranks first (RSA's data-initialised REM heads start from the same estimate), or no cycle
        where none is found. Each series of the training frame has its own row, a new series the mean of
        them; ``cycle_`` records the period. A point or quantile loss and fixed windows only (not
        ``stream=True``). None: no cycle (docs/long_horizon.md).

    Examples
    --------
    >>> from tsrsa import Covariates
    >>> Covariates(future=["promo"], calendar="auto")
    Covariates(future=['promo'], calendar='auto')
    >>> Covariates(norm="series")
    Traceback (most recent call last):
    ...
    ValueError: Covariates: norm='series' is not supported; use one of ('window', 'fit') or None
    """

    past: list | None = None  # columns known up to each series' end
    future: list | None = None  # columns known for the horizon too
    static: list | None = None  # one value per series
    calendar: str | list | None = None  # "auto" or feature names, generated from the timestamps
    holidays: str | None = None  # a country code: a public-holiday flag
    unknown_categories: str = "raise"  # a category unseen in fit: "raise" or "unknown"
    norm: str | None = None  # "window", "fit" or None (the configuration's)
    cycle: int | str | None = None  # a learned cycle's period in steps, "auto" or None

    def check(self) -> None:
        for name in ("past", "future", "static"):
            column_names(name, getattr(self, name))
        calendar = self.calendar
        if calendar is not None:
            if isinstance(calendar, str):
                if calendar != "auto":
                    raise ValueError(f"calendar={calendar!r} must be None, 'auto' or a list of "
                                     f"{list(CALENDAR_FEATURES)}")
            else:
                unknown = [c for c in column_names("calendar", calendar) if c not in CALENDAR_FEATURES]
                if unknown:
                    raise ValueError(f"calendar names unknown feature(s) {unknown}; choose from "
                                     f"{list(CALENDAR_FEATURES)}")
        if self.holidays is not None and not isinstance(self.holidays, str):
            raise TypeError(f"holidays={self.holidays!r} must be a country code of the holidays package (e.g. 'US') "
                            f"or None")
        if self.unknown_categories not in UNKNOWN_POLICIES:
            raise ValueError(f"unknown_categories={self.unknown_categories!r} must be one of {UNKNOWN_POLICIES}")
        check_choice("norm", self.norm, ("window", "fit"), allow_none=True)
        cycle = self.cycle
        if cycle is not None and not (isinstance(cycle, str) and cycle == "auto"):
            if isinstance(cycle, str):
                raise ValueError(f'cycle={cycle!r} is not supported; use "auto", a period in steps (2 or more) '
                                 f'or None')
            check_int("cycle", cycle, minimum=2)

    @classmethod
    def example(cls) -> str:
        return 'tsrsa.Covariates(future=["promo"]) or covariates={"future": ["promo"]}'


__all__ = ["Covariates", "Start"]
