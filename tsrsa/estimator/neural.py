"""Neural forecasters: scaling, windows, training and batched prediction around a network.

A neural forecaster class adds its architecture arguments to the common ones and names its
network through two hooks:

- ``network_config(data_init=None)``: a dataclass describing the network (stored with a saved model);
  ``data_init`` is what ``_prepare_fit`` estimated from the training parts for this fit, if anything;
- ``build_network(config)``: the ``nn.Module`` for that config.

The estimator is composed of parts, each built from its options and passing back what it fits: the fit
plan (:mod:`tsrsa.estimator.plan`), the statistical start (``statistical_start``, a
:class:`~tsrsa.estimator.started.StatisticalStart`), the members of an ensemble
(:mod:`tsrsa.estimator.ensembles`), the output head (``output_head``, an
:class:`~tsrsa.estimator.outputs.OutputHead`), the calibration (:mod:`tsrsa.estimator.conformal`) and the
fitted state (``state_type()``). What a fit estimates on the way (the start's map, the checkpoint, the
data-derived initialisation) is passed as arguments, never left on the estimator.

The arguments they share are written once, in :mod:`tsrsa.estimator.common_params`; three of them are
option groups (:mod:`tsrsa.estimator.option_groups`): ``start`` (a :class:`~tsrsa.estimator.groups.Start`),
``covariates`` (a :class:`~tsrsa.estimator.groups.Covariates`) and ``trainer``, where and how the network
trains (a :class:`~tsrsa.estimator.trainer.Trainer`), each read resolved (``resolved_start``, ...).
"""
from __future__ import annotations

import dataclasses
import numbers
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tsrsa.data.covariate_encoding import CovariateEncoder
from tsrsa.data.cycles import fitted_cycle, with_cycle
from tsrsa.data.frequency import look_back_seasons
from tsrsa.data.native import frame_kind
from tsrsa.data.scalers import check_scaled, series_statistics
from tsrsa.data.windows import ConsecutiveWindows, WindowSource
from tsrsa.estimator.base import BaseForecaster, quiet
from tsrsa.estimator.ensembles import (
    check_ensemble_size, ensembled, member_weights, one_network_reason, saved_members,
)
from tsrsa.estimator.fine_tuning import fine_tune, fitted_config, kept_statistics
from tsrsa.estimator.groups import Covariates, Start
from tsrsa.estimator.learned_cycle import check_period, cycle_period
from tsrsa.estimator.lookback import choose_lookback, is_auto
from tsrsa.estimator.outputs import DEFAULT_QUANTILES  # noqa: F401 (its old home)
from tsrsa.estimator.outputs import OutputHead, check_random_state, check_sample_size
from tsrsa.estimator.params import check_float, check_int, suggest_names
from tsrsa.estimator.plan import (
    MIN_TRAINING_WINDOWS, DataSummary, FitPlan, default_input_size, recovered_plan, resolve_plan,
)
from tsrsa.estimator.plan_ahead import plan_ahead
from tsrsa.estimator.sharded import agree_with_rank0, check_shardable, window_counts
from tsrsa.estimator.started import StatisticalStart, start_refusal
from tsrsa.estimator.training_run import train_member
from tsrsa.estimator.trainer import FIELDS as TRAINER_FIELDS
from tsrsa.estimator.trainer import Trainer, as_trainer, flat_params
from tsrsa.estimator.window_state import SCALED_FIX, encoded
from tsrsa.nn.covariates import CovariateBatch
from tsrsa.nn.losses import make_loss
from tsrsa.training import SINGLE, TrainingConfig, check_precision, resolve_seed, seeded, torch_threads
from tsrsa.training.budget import check_budget
from tsrsa.training.checkpoint import Checkpoint, fingerprint
from tsrsa.training.devices import autocast
from tsrsa.training.distributed import join_process_group, plan_placement
from tsrsa.training.loop import check_lr_schedule


class NeuralForecaster(BaseForecaster):
    """Base of the neural forecasters (see the module docstring)."""

    stochastic = True
    reads_scaled = True
    takes_covariates = True
    saves_weights = True
    option_groups = {"start": Start, "trainer": Trainer, "covariates": Covariates}
    #: options that were arguments of their own, by their old names (the trainer's first nine until 0.15, the
    #: others until 0.16), taken with a DeprecationWarning until 0.19
    moved_params = {
        "start_learning_rate": ("start", "learning_rate"), "start_margin": ("start", "margin"),
        "start_weight": ("start", "weight"),
        **{name: ("trainer", name) for name in TRAINER_FIELDS},
        "past_covariates": ("covariates", "past"), "future_covariates": ("covariates", "future"),
        "static_covariates": ("covariates", "static"), "calendar": ("covariates", "calendar"),
        "holidays": ("covariates", "holidays"), "unknown_categories": ("covariates", "unknown_categories"),
        "covariate_norm": ("covariates", "norm"),
    }

    # ------------------------------------------------------------------ the option groups
    @classmethod
    def name_hint(cls, name: str, value) -> str:
        """The closest parameter names; for a name close to an option of a group, that option in its group."""
        for group, group_cls in cls.option_groups.items():
            option = suggest_names(name, group_cls.field_names(), value=value, defaults=group_cls.field_defaults())
            if option.startswith("did you mean"):
                field = option.split("'")[1]
                owner = f"tsrsa.{group_cls.__name__}" if isinstance(group_cls, type) else group
                return f"did you mean {group}={{{field!r}: {value!r}}} (an option of {owner})?"
        return super().name_hint(name, value)

    @property
    def resolved_trainer(self) -> Trainer:
        """``trainer`` as a checked :class:`~tsrsa.estimator.trainer.Trainer` (None: the defaults; a dict: the
        options it names): where and how this model trains, what the library reads."""
        return as_trainer(self.trainer)

    @property
    def resolved_start(self) -> Start:
        """``start`` as a checked :class:`~tsrsa.estimator.groups.Start` (a kind's name: that kind)."""
        return Start.coerce(self.start, "start")

    @property
    def resolved_covariates(self) -> Covariates:
        """``covariates`` as a checked :class:`~tsrsa.estimator.groups.Covariates` (None: none)."""
        return Covariates.coerce(self.covariates, "covariates")

    @property
    def verbosity(self) -> int:
        """The trainer's ``verbose``."""
        return int(self.resolved_trainer.verbose)

    # ------------------------------------------------------------------ the parts
    @property
    def output_head(self) -> OutputHead:
        """What the network's head outputs for ``loss`` and how its outputs become columns
        (:class:`~tsrsa.estimator.outputs.OutputHead`)."""
        return OutputHead(self.loss, self.quantiles, self.scaler)

    @property
    def statistical_start(self) -> StatisticalStart:
        """The statistical start of this configuration (:class:`~tsrsa.estimator.started.StatisticalStart`)."""
        head = self.output_head
        return StatisticalStart(self.resolved_start, int(self.h), self.why_no_start(), head.levels is not None)

    def why_no_start(self) -> str | None:
        """Why this configuration takes no statistical start (the rest of a refusal), or None."""
        return start_refusal(self.state_type().no_start, self.loss, self.output_head.distribution)

    def head_quantile_levels(self) -> tuple[float, ...]:
        """The levels of the ``yhat_q..`` columns (see :meth:`BaseForecaster.head_quantile_levels`)."""
        return self.output_head.asked

    def output_columns(self, y: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> dict[str, np.ndarray]:
        """Head outputs ``y`` (n, h, Q) in the scaled units of series with statistics ``loc``/``scale`` (n,) ->
        forecast columns in the data's units (:meth:`~tsrsa.estimator.outputs.OutputHead.columns`)."""
        return self.output_head.columns(y, loc, scale)

    def to_panel(self, df, *, fitted: bool = False):
        panel = super().to_panel(df, fitted=fitted)
        self.output_head.check_target(panel, self.target_col)
        return panel

    # ------------------------------------------------------------------ hooks
    def network_config(self, data_init=None):
        """The network's configuration; ``data_init``: what ``_prepare_fit`` estimated for this fit."""
        raise NotImplementedError

    @staticmethod
    def build_network(config) -> torch.nn.Module:
        raise NotImplementedError

    def _check_architecture(self) -> None:
        """Subclasses validate their own architecture arguments here."""

    def _prepare_fit(self, panel, fit_lengths):
        """Subclasses may estimate from the training parts what shapes and starts their network (before it is
        built), e.g. dilations from seasonal periods; what they return is passed to ``network_config`` and
        ``_initialise_network`` (None here)."""
        return None

    def _initialise_network(self, network: torch.nn.Module, panel, fit_lengths, data_init=None) -> None:
        """Subclasses may set initial weights from the training data (training parts only) and ``data_init``,
        what their ``_prepare_fit`` returned."""

    def _covariate_norm(self) -> str:
        """The covariates' ``norm`` resolved: the state type's default ("window"; "fit" when streaming)."""
        norm = self.resolved_covariates.norm
        return norm if norm is not None else self.state_type().covariate_norm

    def _covariate_layout(self) -> dict:
        """The network's covariate layout (``tsrsa.nn.covariates``) from the fitted encoding."""
        window = self.covariates_.numeric_channels() if self._covariate_norm() == "window" else []
        return {**self.covariates_.shape(), "window_norm": window}

    def _group_options(self) -> dict | None:
        """Optimiser options of the network's named parameter groups (see TrainingConfig.group_options)."""
        return None

    # ------------------------------------------------------------------ derived settings
    @property
    def resolved_input_size(self) -> int:
        """``input_size``; by default (and with "auto"), the look-back the fit chose (``input_size_``, from
        :func:`tsrsa.estimator.plan.default_input_size` or :func:`tsrsa.estimator.lookback.choose_lookback`),
        before a fit two horizons and at least one patch."""
        if self.input_size is not None and not is_auto(self.input_size):
            return int(self.input_size)
        fitted = vars(self).get("input_size_")
        return int(fitted) if fitted is not None else max(2 * int(self.h), self.patch_steps())

    def patch_steps(self) -> int:
        """Steps of one input token (``patch_len``; 1 for a network without patches)."""
        patch = getattr(self, "patch_len", 1)
        return patch if isinstance(patch, numbers.Integral) else 1

    def input_size_for(self, shortest: int, freq) -> int:
        """The look-back of a fit whose shortest training part has ``shortest`` steps, of data at ``freq`` (with
        "auto", the default rule's: the choice among look-backs is the fit's)."""
        if self.input_size is not None and not is_auto(self.input_size):
            return int(self.input_size)
        return default_input_size(int(self.h), self.patch_steps(), shortest, look_back_seasons(freq))[0]

    def check_params(self) -> None:
        super().check_params()
        if isinstance(self.input_size, str) and not is_auto(self.input_size):
            raise ValueError(f'input_size={self.input_size!r} is not supported; use a number of steps, None (the '
                             f'default rule) or "auto" (chosen on the validation windows)')
        if not is_auto(self.input_size):
            check_int("input_size", self.input_size, allow_none=True)
        self.output_head.check()  # loss, quantiles, scaler
        check_budget("max_epochs", self.max_epochs, allow_none=False)
        check_int("batch_size", self.batch_size)
        check_float("learning_rate", self.learning_rate, strict=True)
        check_float("weight_decay", self.weight_decay)
        check_lr_schedule(self.lr_schedule)
        check_int("val_size", self.val_size, minimum=0)
        if 0 < self.val_size < self.h:
            raise ValueError(
                f"val_size={self.val_size} must be 0 (no validation) or at least h={self.h}, so "
                f"that a validation window's targets fit in the held-out steps"
            )
        as_trainer(self.trainer)  # each of its options checked (tsrsa.estimator.trainer.Trainer)
        resolve_seed(self.random_state)
        self.declared_covariates()  # each option of covariates checked, then the columns
        self.statistical_start.check()  # each option of start checked (tsrsa.estimator.groups.Start), then here
        check_ensemble_size(self.ensemble_size, one_network_reason(
            self.state_type().one_network, self.loss, self.output_head.distribution,
            self.resolved_trainer.checkpoint_dir))
        cycle = self.resolved_covariates.cycle
        if cycle is not None and self.state_type().streams:
            raise ValueError("covariates={'cycle': ...} needs fixed windows (each window's phase in the cycle); "
                             "stream=True reads a series token by token: leave one of them out")
        if cycle is not None and self.output_head.distribution is not None:
            raise ValueError(f"covariates={{'cycle': ...}} adds the cycle to a point or quantile forecast; "
                             f"loss={self.loss!r} forecasts a distribution's parameters: use loss='mae', 'mse' "
                             f"or 'quantile', or leave the cycle out")
        self._check_architecture()

    def required_length(self, panel) -> tuple[int, str]:
        h, v = int(self.h), int(self.val_size)
        if self.input_size is not None and not is_auto(self.input_size):
            L = int(self.input_size)
            return L + h + v, f"input_size={L} + h={h} + val_size={v}"
        _, least, _ = default_input_size(h, self.patch_steps(), int(panel.lengths.min()) - v)
        extra = MIN_TRAINING_WINDOWS - 1
        return least + h + v + extra, (f"input_size=None: a look-back of at least {least} + h={h} + val_size={v} + "
                                       f"{extra} more steps for {MIN_TRAINING_WINDOWS} training windows")

    def _training_config(self, checkpoint: Checkpoint | None) -> TrainingConfig:
        trainer = self.resolved_trainer
        groups = self.statistical_start.optimiser_groups(self._group_options(), self.start_)
        return TrainingConfig(
            max_epochs=self.max_epochs_, batch_size=self.batch_size, batches_per_epoch=self.batches_per_epoch_,
            learning_rate=self.learning_rate, weight_decay=self.weight_decay, lr_schedule=self.lr_schedule,
            early_stopping_patience=self.early_stopping_patience_, precision=check_precision(trainer.precision),
            compile=trainer.compile,
            verbose=trainer.verbose, description=type(self).__name__, group_options=groups,
            checkpoint=checkpoint, validate_start=self.start_ is not None,
            start_margin=float(self.resolved_start.margin),
        )

    # ------------------------------------------------------------------ fit
    def fit_from(self, df, weights: dict, *, new=()):
        """Fit on ``df`` starting from given network weights instead of a fresh initialisation; returns self.

        ``weights`` is a state dict of a network built for the same settings (``network_.state_dict()``
        of a fitted model): every weight of the new network is taken from it, except those whose name
        contains one of the strings in ``new`` (layers the new network adds, which keep their
        initialisation). ``tsrsa.convert.to_recurrent`` finetunes a converted model this way.
        """
        self.check_params()
        return self.fit_panel(self.to_panel(df), warm_start=(weights, tuple(new)), frame_kind=frame_kind(df))

    def plan(self, df) -> FitPlan:
        """The fit plan a ``fit(df)`` would follow (:mod:`tsrsa.estimator.plan`), before any training: the
        budget in steps, the networks, the statistical starts it would fit and every other automatic value
        with its reason, and ``estimated_seconds``, the training's rough wall time here (a few optimiser
        steps of the network timed, times the plan's steps; a statistical start costs at most a fifth
        more). Nothing of this model changes; ``str`` of its ``describe()`` is what ``verbose=1`` prints.
        """
        return plan_ahead(self, df)

    def _fit(self, panel, *, epoch_callback=None, warm_start=None, fitted_from=None) -> None:
        """Train on ``panel``; ``epoch_callback(record)`` sees every epoch's record (the tuner's pruning; of
        an ensemble, its first member's); ``warm_start``: (weights, new) of ``fit_from``; ``fitted_from``:
        the fitted model a ``fine_tune`` continues, whose network configuration, covariate encoding and
        statistics of known ids are kept."""
        v = int(self.val_size)
        fit_lengths = panel.lengths - v
        lookback = None  # the reason of input_size="auto"'s choice
        if fitted_from is not None:
            self.input_size_ = fitted_from.resolved_input_size
        elif is_auto(self.input_size):
            if panel.share is not None:
                raise ValueError('input_size="auto" compares look-backs on the whole panel; a fit from Parquet '
                                 'shards holds one share per process: give input_size a number of steps')
            self.input_size_, lookback = choose_lookback(self, panel, fit_lengths)
        elif panel.share is not None:  # one rank's share: every rank takes the same look-back (no shortening)
            self.input_size_ = self.input_size_for(2 ** 62, panel.freq)
        else:  # what the windows read
            self.input_size_ = self.input_size_for(int(fit_lengths.min()), panel.freq)
        loc, scale = series_statistics(panel.values, panel.offsets, fit_lengths, self.scaler)
        if fitted_from is not None:
            loc, scale = kept_statistics(fitted_from, panel, loc, scale)
        scaled = check_scaled(panel, loc, scale, statistics="the statistics of its training part",
                              fix=SCALED_FIX)  # (N,) float32, built once
        trainer = self.resolved_trainer
        placement = plan_placement(trainer.strategy, trainer.accelerator, trainer.devices)
        state = self.state_type()
        train = state.training_windows(self, scaled, panel.offsets, fit_lengths)  # lazy: index arithmetic
        val = state.validation_windows(self, scaled, panel.offsets, fit_lengths) if v else None
        spec, rows, source = self.declared_covariates(), None, None
        self.covariates_ = None
        if spec.active:  # encoded once; windows gather their rows as they gather the target's
            self.covariates_ = fitted_from.covariates_ if fitted_from is not None else CovariateEncoder.fit(
                spec, panel, fit_lengths)
            rows = encoded(self, panel)
            source = WindowSource(rows.time, self.covariates_.future_from, rows.static_num, rows.static_cat)
        self.cycle_ = fitted_from.cycle_ if fitted_from is not None else self._fit_cycle(panel, fit_lengths)
        if self.cycle_ is not None:  # each window's series row and phase beside its covariates
            source = with_cycle(source, panel, self.cycle_)
        for windows in (train, val):  # one source, built once, for both
            if windows is not None and source is not None:
                windows.covariates = source
        carried = isinstance(train, ConsecutiveWindows)  # reads every window of each series in order
        seed, rank = resolve_seed(self.random_state), SINGLE
        if placement.mode == "join":  # one rank of a torchrun launch: every rank uses rank 0's seed
            rank, seed = join_process_group(placement.device, seed)
        sharded = panel.share is not None and rank.world_size > 1  # this rank holds only its share
        n_train, n_val = len(train), 0 if val is None else len(val)
        if sharded:
            check_shardable(self)
            n_train, n_val = window_counts(n_train, n_val, rank)
        summary = DataSummary.of(panel, fit_lengths, n_train, n_val, spec.active)
        plan = resolve_plan(self, summary, placement=placement, carried=carried, fitted_from=fitted_from)
        if lookback is not None:
            plan = dataclasses.replace(plan, reasons=(("input_size", lookback), *plan.reasons))
        self.plan_ = plan  # every automatic value, decided once: what follows reads the plan
        self.max_epochs_, self.batches_per_epoch_ = plan.epochs, plan.batches_per_epoch
        self.early_stopping_patience_ = plan.patience
        self.n_train_windows_ = n_train
        self.ensemble_size_ = plan.members
        if trainer.verbose >= 1 and rank.rank == 0:
            print(f"{type(self).__name__} fit plan\n{plan.describe()}", file=sys.stderr)
        checkpoint = None if trainer.checkpoint_dir is None else Checkpoint(  # the parameters as 0.14 named them
            Path(trainer.checkpoint_dir), fingerprint(type(self).__name__, flat_params(self.get_params(), type(self)),
                                                      panel.values, panel.offsets))
        start, start_map, data_init = self.statistical_start, None, None
        if fitted_from is None:
            with quiet(trainer.verbose), torch_threads(plan.threads):  # the start's BLAS on the plan's threads too
                start_map = start.fit(plan.start_candidates, scaled, panel.offsets, fit_lengths, panel.lengths,
                                      panel.freq, self.resolved_input_size)
                self.start_ = start.record(start_map)
                data_init = self._prepare_fit(panel, fit_lengths)
            config = self.network_config(data_init)
            if self.covariates_ is not None:
                config = dataclasses.replace(config, covariates=self._covariate_layout())
            if self.cycle_ is not None:
                config = dataclasses.replace(config, cycle=(panel.n_series, self.cycle_["period"]))
            if sharded:  # what is estimated once for the panel: rank 0's estimate on every rank
                config, start_map, data_init = agree_with_rank0((config, start_map, data_init), rank)
                self.start_ = start.record(start_map)
            self.plan_ = dataclasses.replace(self.plan_, start=(self.start_ or {}).get("model"))
        else:
            config = fitted_config(fitted_from)
            self.start_ = fitted_from.start_
        networks, histories, epochs, edges = [], [], [], []
        with quiet(trainer.verbose), torch_threads(plan.threads):
            for k in range(self.ensemble_size_):  # member k: the network of a fit seeded seed + k
                with seeded(seed + k, placement.device) as rng:
                    network = self._assemble(config)
                    if fitted_from is None:
                        self._initialise_network(network, panel, fit_lengths, data_init)
                        if start_map is not None:
                            start.write(network, start_map)
                    if warm_start is not None:
                        load_weights(network, member_weights(warm_start[0], k), warm_start[1])
                    loss_fn = make_loss(self.loss, self.output_head.levels)
                    networks.append(network)
                    if self.ensemble_size_ > 1 and self.start_ is not None:  # each member's own edge, if tested
                        self.start_ = {key: value for key, value in self.start_.items() if key != "edge"}
                    try:
                        histories.append(self._train(network, loss_fn, train, val, placement, seed + k, rng, rank,
                                                     epoch_callback if k == 0 else None,  # a tuner prunes on one
                                                     (n_train, n_val) if sharded else None,
                                                     k if self.ensemble_size_ > 1 else None, checkpoint))
                    except FloatingPointError as error:  # the network holds the best weights so far
                        histories.append(error.training_result.history)
                        self._set_fitted(panel, *ensembled(self, networks, histories), loc, scale, rows)
                        raise
                    epochs.append(self.best_epoch_)
                    edges.append((self.start_ or {}).get("edge"))
        if fitted_from is None:  # a fine-tune keeps its source's blend
            self.start_ = start.combined(networks, self.start_, float(self.plan_.start_weight or 0.0))
        if len(networks) > 1:  # each member's epoch and edge over the start
            self.best_epoch_ = epochs
            if any(edge is not None for edge in edges):
                self.start_ = {**self.start_, "edge": edges}
        self._set_fitted(panel, *ensembled(self, networks, histories), loc, scale, rows)

    def learned_cycle(self) -> dict | None:
        """``cycle_``: the fitted learned cycle (``covariates={"cycle": ...}``), None without one."""
        return self.cycle_

    def _fit_cycle(self, panel, fit_lengths) -> dict | None:
        """The learned cycle's ``cycle_`` for this fit (:mod:`tsrsa.estimator.learned_cycle`), None without one."""
        period, _ = cycle_period(self.resolved_covariates.cycle, panel, fit_lengths)
        if period is None:
            return None
        if panel.share is not None:
            raise ValueError("a learned cycle (covariates={'cycle': ...}) has a row per series of the whole panel; "
                             "a fit from Parquet shards holds one share per process: fit from one frame, or "
                             "leave the cycle out")
        check_period(period, fit_lengths)
        return fitted_cycle(period, panel.ids)

    def _assemble(self, config) -> torch.nn.Module:
        """The network for ``config``, with the fitted statistical start's (still zero) map attached."""
        return self.statistical_start.attach(self.build_network(config), self.start_)

    def _train(self, network, loss_fn, train, val, placement, seed, rng, rank, epoch_callback=None,
               totals=None, member=None, checkpoint=None) -> list[dict]:
        """Train one member ``network`` in place (:func:`tsrsa.estimator.training_run.train_member`, with this
        model's training configuration and ``checkpoint``); returns its history."""
        result = train_member(network, loss_fn, train, val, placement=placement, seed=seed, rng=rng, rank=rank,
                              config=self._training_config(checkpoint), trainer=self.resolved_trainer,
                              batch_size=int(self.batch_size), epoch_callback=epoch_callback, totals=totals,
                              member=member)
        self._trained(result)
        return result.history

    def _trained(self, result) -> None:
        """What a finished training run leaves: the epoch whose weights the network holds (0: the starting
        weights, a statistical start, were kept) and, where the margin was tested, the network's edge
        over the start (``start_["edge"]``, in standard errors)."""
        self.best_epoch_ = result.best_epoch
        if self.start_ is not None and result.start_edge is not None:
            self.start_ = {**self.start_, "edge": round(float(result.start_edge), 4)}

    def _set_fitted(self, panel, network, history, loc, scale, covariates=None) -> None:
        self.network_ = network.eval()
        members = ["member"] if any("member" in record for record in history) else []  # an ensemble's
        self.fit_history_ = pd.DataFrame(
            history, columns=["epoch", "train_loss", "val_loss", "learning_rate", "seconds", *members]
        )
        self.freq_ = panel.freq
        with quiet(self.verbosity):
            self.memory_ = self.state_type().from_fit(self, panel, loc, scale, covariates)

    # ------------------------------------------------------------------ predict
    def _network_forecast(self, tails: np.ndarray, loc: np.ndarray, scale: np.ndarray, covariates=None) -> np.ndarray:
        """The head's outputs (n, H, Q) in the data's units (a point or quantile head)."""
        return self._network_outputs(tails, loc, scale, covariates) * scale[:, None, None] + loc[:, None, None]

    @torch.no_grad()
    def _network_outputs(self, tails: np.ndarray, loc: np.ndarray, scale: np.ndarray, covariates=None) -> np.ndarray:
        """The head's outputs (n, H, Q) in the units of the series scaled by ``loc``/``scale`` (n,), from
        windows (n, L) (and their :class:`~tsrsa.data.memory.WindowCovariates`), in bounded batches."""
        network = self.network_.eval()
        device = next(network.parameters()).device
        L, n = self.resolved_input_size, len(tails)
        out = np.empty((n, int(self.h), network.config.n_outputs), dtype=np.float64)
        batch = int(self.resolved_trainer.inference_batch_size)
        with torch_threads(self.plan_.threads):
            for start in range(0, n, batch):
                stop = min(start + batch, n)
                x = (tails[start:stop, -L:] - loc[start:stop, None]) / scale[start:stop, None]  # (B, L)
                x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device)
                if covariates is not None:
                    x = covariate_batch(x, covariates, slice(start, stop), L, device)
                with autocast(device, self.plan_.precision):
                    y = network(x).float().cpu().numpy()  # (B, H, Q)
                out[start:stop] = y
        return out

    def window_outputs(self, tails, loc, scale, h: int, covariates=None) -> np.ndarray:
        """The head's outputs (n, h, Q) for windows ``tails`` (n, T), in the units of their series scaled by
        ``loc``/``scale`` (n,): what ``forecast_windows`` summarises and ``sample`` draws from."""
        return self._network_outputs(tails, loc, scale, covariates)[:, :h, :]

    def forecast_windows(self, tails, loc, scale, h: int, covariates=None) -> dict[str, np.ndarray]:
        return self.output_columns(self.window_outputs(tails, loc, scale, h, covariates), loc, scale)

    def sample(self, n: int, h: int | None = None, *, df=None, future_df=None, random_state=None) -> pd.DataFrame:
        """Sample paths of the next ``h`` steps of every series, from a model with a distribution loss.

        Parameters
        ----------
        n : int
            Paths per series (>= 1). A request whose frame would pass the memory limit of one request
            (8 GiB, or ``TSRSA_MAX_REQUEST_BYTES``: :mod:`tsrsa.data.limits`) is refused before anything
            is drawn.
        h : int, optional
            Steps (default: the trained horizon).
        df, future_df
            As in ``predict``: forecast after the end of each series of ``df``; the known-future
            covariates of the horizon.
        random_state : int, numpy Generator or None
            Seed of the draws (a local generator: the global random state is left as it was).

        Returns
        -------
        DataFrame
            Long frame: id, time, ``sample`` (0..n-1) and ``yhat`` (the drawn value), rows ordered by
            series, sample, time. Each step is drawn from its forecast distribution independently of
            the other steps (the head gives marginals); counts are whole numbers.
        """
        self.check_is_fitted()
        head = self.output_head
        if head.distribution is None:
            raise ValueError(f"sample() draws from a forecast distribution, and loss={self.loss!r} gives none: "
                             f"fit with loss='normal', 'student_t' or 'negative_binomial'")
        check_int("n", n)
        h = self._check_predict_h(h)
        rng = check_random_state(random_state)
        with quiet(self.verbosity):
            memory = self.memory_ if df is None else self.memory_.for_frame(self, self._predict_panel(df))
            check_sample_size(int(n), len(memory.ids), h)
            y = memory.forecast_outputs(self, h, future_df)  # (S, h, Q) the head's outputs, scaled units
            draws = head.draws(y, memory.loc, memory.scale, int(n), rng)  # (S, h, n)
        S = len(memory.ids)
        stamps = pd.Index(self.freq_.future(memory.last, h))  # (S * h,) series-major
        where = (np.arange(S)[:, None, None] * h + np.arange(h)[None, None, :]).repeat(n, axis=1)  # (S, n, h)
        return pd.DataFrame({self.id_col: memory.ids.repeat(n * h), self.time_col: stamps.take(where.ravel()),
                             "sample": np.tile(np.repeat(np.arange(n), h), S),
                             "yhat": draws.transpose(0, 2, 1).reshape(-1)})

    # ------------------------------------------------------------------ fine-tuning
    def fine_tune(self, df, *, max_epochs=10, learning_rate=None):
        """Train the fitted network further on ``df``, from its weights; returns self
        (:mod:`tsrsa.estimator.fine_tuning`).

        The neuralforecast/darts idiom for new data of the same series (or related ones): the weights,
        the network's configuration, the covariate encoding and the scaling statistics of every known
        series are kept (a new id gets its own from ``df``); the state ``predict`` reads becomes that of
        ``df``'s series, as after ``fit(df)``. All or nothing: when it raises, the model is as it was.

        Parameters
        ----------
        df : DataFrame or Series
            Training data (long, wide or Series, the fitted column names and frequency); every series
            needs ``input_size + h + val_size`` observations, as for ``fit``. Validation, early stopping
            and (with ``conformal_windows``) the calibration run as ``fit`` runs them on it.
        max_epochs : int or "auto", default 10
            Epochs of this fine-tuning (the model's own ``max_epochs`` is left as it is).
        learning_rate : float, optional
            Its learning rate (default: the model's ``learning_rate``); the optimiser starts afresh.

        Returns
        -------
        self
            With ``fit_history_`` the fine-tuning's epochs; ``get_params()`` unchanged.
        """
        return fine_tune(self, df, max_epochs=max_epochs, learning_rate=learning_rate)

    # ------------------------------------------------------------------ saving
    def fitted_files(self):
        state, arrays, _ = super().fitted_files()
        state["network"] = dataclasses.asdict(self.network_.config)
        state["fit_history"] = self.fit_history_.to_dict(orient="list")
        state["start"] = self.start_
        state["best_epoch"] = self.best_epoch_
        state["plan"] = self.plan_.to_json()
        state["cycle"] = self.cycle_
        return state, arrays, self.network_.state_dict()

    def adopt_plan(self, state: dict) -> None:
        """``plan_`` from a saved model's state, before anything is rebuilt from it: the plan its fit kept, or
        for a model saved before plans were kept, the values that version's fit resolved
        (:func:`tsrsa.estimator.plan.recovered_plan`)."""
        self.plan_ = FitPlan.from_json(state["plan"]) if "plan" in state else recovered_plan(self, state)
        if self.plan_.input_size is not None:
            self.input_size_ = self.plan_.input_size

    def restore_fitted(self, state, arrays, weights, device) -> None:
        super().restore_fitted(state, arrays, weights, device)
        config = type(self.network_config())(**state["network"])
        self.start_ = state.get("start")  # saved before starts existed: none
        self.cycle_ = state.get("cycle")  # saved before cycles existed: none
        self.ensemble_size_ = saved_members(weights)
        if self.plan_.recovered:  # a folder saved before plans were kept: its members are in its weights
            self.plan_ = dataclasses.replace(self.plan_, members=self.ensemble_size_)
        network, _ = ensembled(self, [self._assemble(config) for _ in range(self.ensemble_size_)])
        network.load_state_dict(weights)
        self.network_ = network.to(device).eval()
        self.fit_history_ = pd.DataFrame(state["fit_history"])
        self.best_epoch_ = state.get("best_epoch")  # saved before it was kept: None

    def to_onnx(self, path, *, overwrite: bool = False):
        """Export for serving without torch (``tsrsa.load_onnx``): :func:`tsrsa.serving.onnx_export.export_onnx`."""
        from tsrsa.serving.onnx_export import export_onnx
        return export_onnx(self, path, overwrite=overwrite)


def covariate_batch(x: torch.Tensor, covariates, rows: slice, input_size: int, device) -> CovariateBatch:
    """The network input of windows ``x`` (B, L) and rows ``rows`` of their ``WindowCovariates``."""
    def tensor(array, dtype=np.float32):
        if array is None or array.shape[-1] == 0:
            return None
        return torch.from_numpy(np.ascontiguousarray(array[rows], dtype=dtype)).to(device)

    past = covariates.past[:, -input_size:] if covariates.past.shape[-1] else covariates.past
    return CovariateBatch(x, tensor(past), tensor(covariates.future), tensor(covariates.static_num),
                          tensor(covariates.static_cat, np.int64), tensor(covariates.cycle, np.int64))


def load_weights(network: torch.nn.Module, donor: dict, new: tuple[str, ...] = ()) -> None:
    """Load ``donor`` into ``network``: every weight but those whose name contains one of ``new``
    (layers the network adds, which keep their initialisation); ValueError when they do not fit."""
    expected = network.state_dict()
    missing = [k for k in expected if k not in donor and not any(tag in k for tag in new)]
    extra = [k for k in donor if k not in expected]
    shapes = [k for k in donor if k in expected and donor[k].shape != expected[k].shape]
    if missing or extra or shapes:
        raise ValueError(
            f"the given weights do not fit this network (missing {missing[:3]}, unexpected {extra[:3]}, "
            f"other shapes {shapes[:3]}): was the original built for other data?")
    network.load_state_dict(donor, strict=False)
