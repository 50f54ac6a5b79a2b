"""The fit plan: every automatic value of a neural forecaster's fit, decided once, with its reason.

``fit`` begins by reading a summary of the data (:class:`DataSummary`: series, lengths, training and
validation windows, frequency and season, covariates) and resolving every parameter left to the
library into one frozen :class:`FitPlan`, kept as ``model.plan_``. Everything after reads the plan,
never the raw "auto"; ``save`` writes it and ``tsrsa.load`` rebuilds the network from it, so that a
loaded model never decides again what "auto" meant. ``model.plan(df)`` resolves the same plan
before a fit and estimates its time; a trainer's ``verbose=1`` prints it.

Every rule lives here (:data:`RULES` lists them with their reasons; docs/fit_plan.md is generated
from that list and a test holds the two together):

- ``input_size=None``: two horizons and at least one season (the frequency's first natural period; the
  week of hourly data where the shortest series holds two weeks and a horizon), shortened on
  short series so that the shortest keeps ``MIN_TRAINING_WINDOWS`` training windows (at least half a horizon
  and one patch);
- the budget (``max_epochs``, the trainer's ``batches_per_epoch`` and ``early_stopping_patience``): the step
  arithmetic of :mod:`tsrsa.training.budget`, about ``TARGET_STEPS`` optimiser steps;
- ``ensemble_size="auto"``: one network (three members cost three fits for 1-3 % on a handful of
  series, and did not carry over to other data);
- ``start="auto"``: the candidates "ar" and "ets", and "arima" too on one short series at the
  automatic budget; the one kept is chosen on the held-out windows and recorded in ``plan_.start``;
- ``start=Start(weight="auto")``: half of the network's correction on a short fit at the automatic budget;
- ``rem=REM(gate_init="auto")`` (RSA): -2 in a fit of one series at the automatic budget, else 0;
- ``readout_tokens="auto"`` (transformers): the latest ceil(h / patch_len) tokens on fewer than
  ``SHORT_WINDOWS`` training windows, else every token;
- the trainer's ``num_threads=None``: one torch thread on the CPU (a second thread gains little on these networks
  and collapses when another process keeps a core busy; benchmarks/threads.py), torch's own count on
  an accelerator;
- the device and precision that the trainer's ``accelerator``, ``devices`` and ``precision`` name.
"""
from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass

from tsrsa.data.frequency import look_back_seasons, season_steps
from tsrsa.training import budget as step_budget

AUTO = "auto"

#: what the automatic rules for short data read: a fit at the automatic budget on fewer training windows
#: than this (a series of a couple of thousand steps or less)
SHORT_WINDOWS = 2000
#: ``start="auto"``: the candidates of every fit, and of one short series (an ARIMA search pays there)
START_CANDIDATES = ("ar", "ets")
SHORT_START_CANDIDATES = ("ar", "ets", "arima")
#: the start's ``weight="auto"`` on a short fit (docs/statistical_start.md, "A combination of start and network")
SHORT_START_WEIGHT = 0.5
#: ``rem``'s ``gate_init="auto"``: RSA's gate logit in a fit of one series at the automatic budget (sigmoid(-2) = 0.12)
SINGLE_SERIES_GATE = -2.0
#: the trainer's ``num_threads=None`` on the CPU
CPU_THREADS = 1
#: ``input_size=None`` shortens two horizons so that the shortest series keeps this many training windows
MIN_TRAINING_WINDOWS = 4


def _auto(value) -> bool:
    return isinstance(value, str) and value == AUTO


@dataclass(frozen=True)
class DataSummary:
    """What the rules read of the data: series, lengths, windows, frequency, covariates."""

    series: int                 # series in the fit (this rank's share of a sharded one: its own)
    shortest: int               # training steps of the shortest series (validation steps excluded)
    longest: int
    train_windows: int          # training windows of the whole fit (every rank's)
    val_windows: int
    freq: str                   # the frequency as fitted ("MS", "h", "1" for integer time)
    season: int                 # the frequency's natural period (1: none)
    covariates: bool            # any declared covariate
    cycle: int | None = None    # the longest season the default look-back may hold (the week of hourly data;
                                # None: saved before 0.18.3)

    @classmethod
    def of(cls, panel, fit_lengths, train_windows: int, val_windows: int, covariates: bool) -> "DataSummary":
        return cls(series=len(fit_lengths), shortest=int(min(fit_lengths)), longest=int(max(fit_lengths)),
                   train_windows=int(train_windows), val_windows=int(val_windows),
                   freq=panel.freq.alias if panel.freq.is_datetime else str(panel.freq.step),
                   season=season_steps(panel.freq), covariates=bool(covariates),
                   cycle=look_back_seasons(panel.freq)[0])


@dataclass(frozen=True)
class FitPlan:
    """Every automatic value of one fit (module docstring). None: not applicable, or not recorded by the
    version that saved the model (``recovered``)."""

    epochs: int | None                  # passes of the budget
    batches_per_epoch: int | None       # None: every window each pass
    patience: int | None                # None: no early stopping
    steps: int | None                   # optimiser steps of each network's whole budget
    members: int                        # networks trained apart and averaged
    start_candidates: tuple = ()        # the statistical starts fitted; () none
    start: str | None = None            # the one kept (after the fit's start; None before, or none)
    start_weight: float | None = None   # the start's weight in the trained forecast
    gate_init: float | None = None      # RSA's gate logit at the start
    readout_tokens: int | None = None   # tokens the head reads (None: every token, or not a transformer)
    device: str = "cpu"
    precision: str = "32"
    threads: int | None = None          # torch threads (None: torch's own count)
    input_size: int | None = None       # the look-back (None: not recorded, saved by 0.14.0 or before)
    reasons: tuple = ()                 # (value name, reason) of each automatic value
    data: DataSummary | None = None
    recovered: bool = False             # rebuilt for a model saved before plans were kept
    estimated_seconds: float | None = None  # ``model.plan(df)``'s estimate of the training's wall time

    def reason(self, name: str) -> str | None:
        """The reason of the value ``name`` (as the plan names it, ``trainer.num_threads``, or by its field
        alone, ``num_threads``), or None."""
        for key, text in self.reasons:
            if key == name or key.rsplit(".", 1)[-1] == name:
                return text
        return None

    def describe(self) -> str:
        """The plan in a few lines (what ``verbose=1`` prints)."""
        d = self.data
        lines = []
        if d is not None:
            lines.append(f"data: {d.series} series of {d.shortest}-{d.longest} training steps, {d.train_windows} "
                         f"training and {d.val_windows} validation windows, frequency {d.freq} (season {d.season}"
                         f"{f', week {d.cycle}' if d.cycle not in (None, d.season) else ''})")
        if self.steps is not None:
            per = "every window" if self.batches_per_epoch is None else f"{self.batches_per_epoch} batches"
            stop = "no early stopping" if self.patience is None else f"patience {self.patience}"
            lines.append(f"training: {self.members} network(s) x {self.steps} steps ({self.epochs} epochs of "
                         f"{per}; {stop}) on {self.device}, precision {self.precision}, "
                         f"{self.threads or 'all'} thread(s)")
        if self.estimated_seconds is not None:
            lines.append(f"estimated training time: about {self.estimated_seconds:g} s here")
        if self.start_candidates:
            kept = f", kept {self.start}" if self.start else ""
            lines.append(f"start: candidates {', '.join(self.start_candidates)}{kept}; weight {self.start_weight}")
        else:
            lines.append("start: none")
        shaped = (("input_size", self.input_size), ("gate_init", self.gate_init), ("readout_tokens", self.readout_tokens))
        extra = [f"{name} {value}" for name, value in shaped if value is not None]
        if extra:
            lines.append("network: " + ", ".join(extra))
        lines.extend(f"  {name}: {why}" for name, why in self.reasons)
        return "\n".join(lines)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["start_candidates"] = list(self.start_candidates)
        data["reasons"] = [list(pair) for pair in self.reasons]
        return data

    @classmethod
    def from_json(cls, data) -> "FitPlan":
        """The plan ``to_json`` wrote; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"a fit plan is a JSON object, got {type(data).__name__}")
        fields = {field.name for field in dataclasses.fields(cls)}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"the fit plan has unknown entries {sorted(unknown)}")
        values = dict(data)
        summary = values.get("data")
        values["data"] = None if summary is None else DataSummary(**summary)
        values["start_candidates"] = tuple(values.get("start_candidates", ()))
        values["reasons"] = tuple(tuple(pair) for pair in values.get("reasons", ()))
        plan = cls(**values)
        for name in ("members",):
            value = getattr(plan, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"the fit plan's {name}={value!r} is not a count >= 1")
        return plan


# ---------------------------------------------------------------------- the rules
#: every automatic value: (parameter, its automatic spelling, what it becomes and why); docs/fit_plan.md
#: renders this table
RULES = (
    ("input_size", "None",
     f"two horizons, and at least one season (the frequency's first natural period: 52 weekly, 12 monthly, 7 "
     f"daily, none for integer time; of data spaced an hour or more and less than a day apart, the week, 168 "
     f"steps hourly, where the shortest series has as many training windows as the week has steps, else the "
     f"day) and one patch; where the shortest series' training part cannot hold that, the longest look-back "
     f"that leaves it a horizon and {MIN_TRAINING_WINDOWS} training windows, down to half a horizon: a short "
     f"series is fitted rather than refused"),
    ("max_epochs", '"auto"',
     f"about {step_budget.TARGET_STEPS} optimiser steps, in {step_budget.MIN_EPOCHS} to {step_budget.MAX_EPOCHS} "
     f"epochs: a fixed number of epochs is a different amount of training on every data set"),
    ("trainer.batches_per_epoch", '"auto"',
     f"at most {step_budget.EPOCH_STEPS} batches drawn afresh when a pass is longer (with max_epochs=\"auto\"), so "
     f"that validation and the schedule keep their grip on a large panel; every window otherwise"),
    ("trainer.early_stopping_patience", '"auto"',
     f"a fifth of the epochs, at least {step_budget.MIN_PATIENCE} (only with val_size > 0); epochs of a one-cycle "
     f"schedule's warm-up, its first 30 %, spend none"),
    ("ensemble_size", '"auto"',
     "one network: three averaged networks cost three fits for 1-3 % on a handful of short series, a gain "
     "that did not carry over to other data"),
    ("start", '"auto"',
     f"candidates {', '.join(START_CANDIDATES)}; on one short series ({', '.join(SHORT_START_CANDIDATES)}), where "
     f"an ARIMA search costs little against the network; the one of lowest error on the held-out windows is kept; "
     f"none with stream=True or a distribution loss"),
    ("start.weight", '"auto"',
     f"{SHORT_START_WEIGHT} on a short fit (automatic budget, fewer than {SHORT_WINDOWS} training windows) with a "
     f"point forecast: the start keeps half of the forecast; else 0"),
    ("rem.gate_init", '"auto" (RSA)',
     f"{SINGLE_SERIES_GATE} (sigmoid = 0.12 of each REM head from its REM) in a fit of one series at the automatic "
     f"budget, else 0"),
    ("readout_tokens", '"auto" (transformers)',
     f"the latest ceil(h / patch_len) tokens on fewer than {SHORT_WINDOWS} training windows, else every token"),
    ("trainer.num_threads", "None",
     f"{CPU_THREADS} torch thread on the CPU: a second thread gains little on these networks and collapses beside "
     f"another busy process; torch's own count on an accelerator"),
    ("trainer.accelerator", '"auto"', "CUDA when torch sees it, else the CPU"),
)


def default_input_size(h: int, patch: int, shortest: int, seasons=1) -> tuple[int, int, str]:
    """``input_size=None`` for series whose shortest training part has ``shortest`` steps and whose seasons are
    ``seasons`` steps (one, or several longest first: the week and the day of hourly data): (the look-back, the
    least look-back the rule takes, its reason). Two horizons, and at least one season and one patch: a longer
    season where the shortest part has as many training windows as the look-back has steps, else the last
    season where the shortest part holds it, a horizon and ``MIN_TRAINING_WINDOWS`` windows; else the longest
    look-back that leaves it those windows, down to max(half a horizon, one patch); below that two horizons,
    which the length check then refuses.

    The season (:func:`tsrsa.data.frequency.look_back_seasons`: the week of hourly data): a network that sees each
    forecast step's value one season earlier can learn the seasonal naive forecast and what corrects it; two
    horizons of weekly data forecast 13 weeks ahead hold half a year, two of hourly data forecast two days
    ahead four days (benchmarks/RESULTS.md, "AutoForecaster on M4" and "A network's look-back: the week")."""
    seasons = (int(seasons),) if isinstance(seasons, numbers.Integral) else tuple(int(s) for s in seasons)
    least = max(-(-h // 2), patch)
    room = shortest - h - (MIN_TRAINING_WINDOWS - 1)

    def rule(season: int) -> tuple[int, str]:
        full = max(2 * h, patch, season)
        return full, ("two horizons" if full == max(2 * h, patch)
                      else f"one season ({season} steps, more than two horizons)")

    skipped = ""
    for season in seasons[:-1]:  # a longer season where the shortest series has a training window per step of it
        full, why = rule(season)
        if shortest - full - h + 1 >= full:
            return full, least, f"{full}: {why}"
        skipped = (f"; not the longer season of {season} steps: it needs {2 * full + h - 1} training steps in the "
                   f"shortest series, which has {shortest}")
    full, why = rule(seasons[-1])
    if room >= full:
        return full, least, f"{full}: {why}{skipped}"
    if room >= least:
        return room, least, (f"{room}: {why} ({full}) would leave the shortest series ({shortest} training "
                             f"steps) fewer than {MIN_TRAINING_WINDOWS} training windows{skipped}")
    return full, least, f"{full}: {why}{skipped}"


def short_fit(estimator, summary: DataSummary) -> bool:
    """A fit at the automatic budget on fewer than :data:`SHORT_WINDOWS` training windows."""
    return _auto(estimator.max_epochs) and summary.train_windows < SHORT_WINDOWS


def resolve_plan(estimator, summary: DataSummary, *, placement, carried: bool = False,
                 fitted_from=None) -> FitPlan:
    """The plan of ``estimator``'s fit on data summarised by ``summary``; ``placement``: where it runs
    (:func:`tsrsa.training.distributed.plan_placement`); ``carried``: the windows are read in order
    (every window each pass); ``fitted_from``: the fitted model a fine-tune continues (its members)."""
    from tsrsa.training import check_precision

    reasons = []

    def why(name: str, text: str) -> None:
        reasons.append((name, text))

    input_size = estimator.resolved_input_size
    if estimator.input_size is None and fitted_from is None:
        why("input_size", default_input_size(int(estimator.h), estimator.patch_steps(), summary.shortest,
                                             (summary.cycle or summary.season, summary.season))[2])
    has_val = summary.val_windows > 0
    trainer = estimator.resolved_trainer
    budget = step_budget.resolve_budget(
        estimator.max_epochs, trainer.early_stopping_patience, summary.train_windows,
        int(estimator.batch_size), has_val, None if carried else trainer.batches_per_epoch)
    steps = budget.steps(summary.train_windows, int(estimator.batch_size))
    if _auto(estimator.max_epochs):
        why("max_epochs", f"{budget.epochs} epochs: {steps} steps over {summary.train_windows} training windows "
                          f"(the target is about {step_budget.TARGET_STEPS} steps, in {step_budget.MIN_EPOCHS} to "
                          f"{step_budget.MAX_EPOCHS} epochs)")
    if _auto(trainer.early_stopping_patience) and budget.patience is not None:
        warm = step_budget.warmup_epochs(budget.epochs, estimator.lr_schedule)
        why("trainer.early_stopping_patience", f"{budget.patience}: a fifth of {budget.epochs} epochs"
                                               + (f", counted after the {warm} warm-up epochs" if warm else ""))

    if fitted_from is not None:
        from tsrsa.nn.ensemble import members_of

        members = len(members_of(fitted_from.network_))
    elif _auto(estimator.ensemble_size):
        members = 1
        why("ensemble_size", "1: one network")
    else:
        members = int(estimator.ensemble_size)

    short = short_fit(estimator, summary)
    candidates: tuple = ()
    start = estimator.resolved_start
    if start.kind is not None and fitted_from is None:
        if start.kind != AUTO:
            candidates = (start.kind,)
        elif estimator.why_no_start() is None:
            single_short = summary.series == 1 and short
            candidates = SHORT_START_CANDIDATES if single_short else START_CANDIDATES
            why("start", f"candidates {', '.join(candidates)}"
                         + (": one short series" if single_short else ""))
        else:
            why("start", f"none: {estimator.why_no_start().split(':')[0]}")

    weight = None
    if candidates:
        if _auto(start.weight):
            point = estimator.loss != "quantile"  # a quantile loss learns its spread in the correction
            weight = SHORT_START_WEIGHT if short and point else 0.0
            why("start.weight", f"{weight}: " + ("a short fit of a point forecast" if weight else
                                                  "not a short fit of a point forecast"))
        else:
            weight = float(start.weight)

    gate = None
    params = estimator.get_params(deep=False)
    given_gate = _gate_init(estimator)
    if given_gate is not None:
        if _auto(given_gate):
            single = summary.series == 1 and _auto(estimator.max_epochs)
            gate = SINGLE_SERIES_GATE if single else 0.0
            why("rem.gate_init", f"{gate}: " + ("one series at the automatic budget" if single else
                                                "a panel, or a budget of its own"))
        else:
            gate = float(given_gate)

    readout = None
    if _auto(params.get("readout_tokens")):
        readout = estimator.short_readout(summary.train_windows < SHORT_WINDOWS)
        why("readout_tokens", f"{'every token' if readout is None else readout}: "
                              f"{summary.train_windows} training windows")

    device = placement.device
    threads = trainer.num_threads
    if threads is None and device.type == "cpu" and placement.mode == "single":
        threads = CPU_THREADS
        why("trainer.num_threads", f"{CPU_THREADS}: the CPU")
    return FitPlan(epochs=budget.epochs, batches_per_epoch=budget.batches_per_epoch, patience=budget.patience,
                   steps=steps, members=members, start_candidates=candidates, start_weight=weight, gate_init=gate,
                   readout_tokens=readout, device=str(device), precision=check_precision(trainer.precision),
                   threads=threads, input_size=input_size, reasons=tuple(reasons), data=summary)


def recovered_plan(estimator, state: dict) -> FitPlan:
    """The plan of a model saved before plans were kept (0.13.0 and earlier), its values as that version's
    fit resolved them from what the folder records: the gate by the series count and the budget, the
    members by the weights, the start and its weight by the saved start."""
    ids = state.get("ids", {}).get("values", ()) if isinstance(state.get("ids"), dict) else ()
    gate = None
    given_gate = _gate_init(estimator)
    if given_gate is not None:
        if _auto(given_gate):
            gate = SINGLE_SERIES_GATE if len(ids) == 1 and _auto(estimator.max_epochs) else 0.0
        else:
            gate = float(given_gate)
    start = state.get("start") if isinstance(state.get("start"), dict) else None
    network = state.get("network") if isinstance(state.get("network"), dict) else {}
    readout = network.get("readout_tokens")
    return FitPlan(epochs=None, batches_per_epoch=None, patience=None, steps=None, members=1,
                   start_candidates=(start["model"],) if start and "model" in start else (),
                   start=start.get("model") if start else None,
                   start_weight=start.get("start_weight") if start else None, gate_init=gate,
                   readout_tokens=readout if isinstance(readout, int) else None, device="cpu",
                   precision=str(estimator.resolved_trainer.precision), threads=estimator.resolved_trainer.num_threads,
                   reasons=(("plan", "recovered from a model saved before fit plans were kept"),), recovered=True)


def _gate_init(estimator):
    """RSA's ``rem.gate_init`` as given (a number or "auto"), or None for a model without REM heads."""
    return estimator.resolved_rem.gate_init if "rem" in estimator.option_groups else None


def rules_table() -> str:
    """docs/fit_plan.md's table: what each automatic value becomes, and why."""
    rows = ["| parameter | automatic value | what it becomes, and why |", "|---|---|---|"]
    rows += [f"| `{name}` | `{spelling}` | {text} |" for name, spelling, text in RULES]
    return "\n".join(rows)


def estimate_seconds(plan: FitPlan, seconds_per_step: float, start_seconds: float = 0.0) -> float:
    """A fit's rough wall time: each member's budget at ``seconds_per_step``, plus the start."""
    steps = plan.steps or 0
    return float(start_seconds + plan.members * steps * seconds_per_step)


__all__ = ["AUTO", "DataSummary", "FitPlan", "RULES", "SHORT_WINDOWS", "recovered_plan", "resolve_plan",
           "rules_table", "short_fit", "estimate_seconds"]
