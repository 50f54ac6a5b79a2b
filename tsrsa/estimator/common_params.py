"""The arguments every neural forecaster shares, written once: their names and defaults, and their words.

A neural forecaster's signature is ``h, *, input_size=None``, its own arguments (architecture, then
``patch_len``), then :data:`COMMON_PARAMS` in that order: :func:`neural_init` builds the constructor from
the two tuples, so that every model takes the shared arguments under the same names, in the same order,
with the same defaults, without a copy to keep aligned. Each forecaster's docstring holds a ``{common}``
mark that :data:`COMMON_PARAMS_DOC` replaces, so ``help()`` and the API pages show the whole argument
list while the words live in one place. Options that belong together are one argument each (``start``,
``trainer``, ``covariates``: :mod:`tsrsa.estimator.option_groups`), whose dataclass documents them field
by field.
"""
from tsrsa.estimator.protocol import keyword_init

#: the arguments every neural forecaster takes after its own, in this order, with these defaults
COMMON_PARAMS = (
    # the output: loss, levels, scaling, the statistical start (a tsrsa.Start, tsrsa.estimator.groups), members
    ("loss", "mae"), ("quantiles", None), ("scaler", "standard"), ("start", "auto"), ("ensemble_size", 1),
    # the data's grid
    ("fill", None), ("freq", None),
    # the optimisation: budget, batches, optimiser, schedule, validation, intervals, seed
    ("max_epochs", "auto"), ("batch_size", 32), ("learning_rate", 1e-3), ("weight_decay", 1e-4),
    ("lr_schedule", "onecycle"), ("val_size", 0), ("conformal_windows", None), ("random_state", None),
    # where and how it trains: one tsrsa.Trainer (tsrsa.estimator.trainer)
    ("trainer", None),
    # covariates: one tsrsa.Covariates (tsrsa.estimator.groups)
    ("covariates", None),
    # the frames' column names
    ("id_col", "unique_id"), ("time_col", "ds"), ("target_col", "y"),
)


def neural_init(own: tuple[tuple[str, object], ...]):
    """The constructor of a neural forecaster whose own arguments (after ``input_size``, before the shared
    ones) are ``own``, (name, default) pairs in order: ``h, *, input_size=None, *own, *COMMON_PARAMS``."""
    return keyword_init(("h",), (("input_size", None), *own, *COMMON_PARAMS))


COMMON_PARAMS_DOC = """
    patch_len : int
        Steps per token (1 = one token per step; the LSTM reads one patch per step). REM lags
        count tokens. Defaults, chosen on accuracy and speed (benchmarks/RESULTS.md, "Default patch
        length"): 4 for the transformers and 8 for the LSTM.
    loss : {"mse", "mae", "huber", "quantile", "normal", "student_t", "negative_binomial"}, default "mae"
        Training loss; "quantile" trains one output per level in ``quantiles``; "normal",
        "student_t" and "negative_binomial" output a distribution's parameters per step, trained by
        negative log-likelihood (``yhat`` its mean; ``sample(n)`` draws paths; counts need
        ``scaler=None``: :mod:`tsrsa.estimator.outputs`). The default, "mae" with the one-cycle
        schedule, was chosen on validation over long-horizon data, a panel of many series and short
        series (its squared validation errors included; docs/benchmark_configuration.md).
    quantiles : list of float, optional
        Levels in (0, 1): for ``loss="quantile"`` the levels trained (default 0.1, 0.5, 0.9; 0.5 is
        always trained and becomes ``yhat``, with a ``yhat_q50`` column only when listed here); for a
        distribution loss the quantiles reported (default none). Columns are named ``yhat_q10``,
        ``yhat_q2.5``, ...
    scaler : {"standard", "robust", "minmax", "identity"} or None, default "standard"
        Per-series scaling fitted on each series' training part.
    start : Start, dict, {"ar", "ets", "arima", "auto"} or None, default "auto"
        A statistical start: the network's forecast is a fitted statistical model's point forecast
        plus the network's correction, which starts at zero, so that the untrained model forecasts as
        the statistical one and training moves away from it only where the data say so.
        ``tsrsa.Start(kind=..., weight=..., margin=..., learning_rate=...)`` or a dict of those
        options; a kind's name alone (``start="ar"``) is that kind with the other defaults, None no
        start (:class:`tsrsa.Start` documents each option). The default, "auto", tries "ar" and "ets"
        (and "arima" on one short series) and keeps the best on the held-out windows; the start's
        weight in the forecast is "auto" too (0.5 on a short fit, else 0). Until tsrsa 0.19 the
        options are also taken as arguments of their own (``start_weight=0.5``,
        ``start_margin``, ``start_learning_rate``), with a DeprecationWarning, and folded in here.
    ensemble_size : int, default 1
        Networks trained apart whose forecasts are averaged (a quantile head's levels averaged level
        by level): member k is the network a fit with ``random_state + k`` trains, early stopping on
        its own validation loss; a fit costs that many fits. "auto" (the default of 0.10-0.13) is one
        network (:mod:`tsrsa.estimator.plan`). Fitted as ``ensemble_size_``; with several members
        ``best_epoch_`` lists each one's epoch, ``fit_history_`` has a ``member`` column and
        ``start_["edge"]`` lists each one's edge. One network only with ``stream=True``, a
        distribution loss or a trainer's ``checkpoint_dir``.
    fill : {"ffill", "interpolate", "zero"} or None, default None
        How to fill missing timestamps and NaN values; None makes them errors.
    freq : str or int, optional
        pandas offset alias ("h", "MS", ...) or integer step; inferred when None.
    max_epochs : int or "auto", default "auto"
        Epochs of training. "auto" counts optimiser steps (``tsrsa.training.budget``): about 2,000
        of them in 10 to 100 epochs, an epoch being one pass over the training windows or, when a
        pass is longer than 400 batches (a large panel), 400 batches drawn afresh from the shuffled
        windows; so a fit runs 2,000 to 4,000 steps whatever the data's size (10 epochs on ETTh1 at
        input 96 with batch 32; 100 on a series of a few hundred steps; 10 of 400 batches on M4
        Hourly). A number counts whole passes. The fitted ``max_epochs_`` and ``batches_per_epoch_``
        say what was allowed, ``fit_history_`` how many epochs ran.
    batch_size : int, default 32
        Training windows per optimisation step.
    learning_rate : float, default 1e-3
    weight_decay : float, default 1e-4
        AdamW's decoupled weight decay.
    lr_schedule : {"cosine", "onecycle", "halving", "constant"} or None, default "onecycle"
        "cosine" anneals to 0 over ``max_epochs``; "onecycle" warms up to ``learning_rate``, then
        anneals over the budget; "halving" halves the rate after every epoch (Time-Series-Library's
        ``type1``); None or "constant": ``learning_rate`` throughout.
    val_size : int, default 0
        Trailing steps of each series held out for validation (0 or at least ``h``).
    conformal_windows : int, optional
        Prediction intervals: hold out the last ``conformal_windows`` horizons (``h`` steps each) of
        every series, score them with a copy of the model fitted without them, and keep those
        errors, so that ``predict(level=[80, 95])`` adds split-conformal intervals calibrated per
        horizon step (one extra fit; :mod:`tsrsa.estimator.conformal`). None: no intervals.
    random_state : int, optional
        Seed that makes a fit repeatable; the global random state is left untouched.
    trainer : Trainer or dict, optional
        Where and how the network trains: ``tsrsa.Trainer(accelerator=..., devices=..., strategy=...,
        precision=..., compile=..., num_threads=..., callbacks=..., checkpoint_dir=..., verbose=...,
        batches_per_epoch=..., early_stopping_patience=..., inference_batch_size=...)`` or a dict of
        those options (``{"num_threads": 2}``); None: ``Trainer()``, the CPU or CUDA when present, one
        process, float32, one CPU thread, silent, the automatic batches per epoch and patience
        (:class:`tsrsa.Trainer` documents each option). Until tsrsa 0.19 each option is also taken as an
        argument of its own (``num_threads=1``), with a DeprecationWarning naming this spelling.
    covariates : Covariates or dict, optional
        Columns read beside the target (docs/covariates.md): ``tsrsa.Covariates(past=..., future=...,
        static=..., calendar=..., holidays=..., unknown_categories=..., norm=...)`` or a dict of those
        options (``{"future": ["promo"], "calendar": "auto"}``); None: none (:class:`tsrsa.Covariates`
        documents each option). Until tsrsa 0.19 the options are also taken as arguments of their
        own (``past_covariates``, ``future_covariates``, ``static_covariates``, ``calendar``,
        ``holidays``, ``unknown_categories``, ``covariate_norm``), with a DeprecationWarning.
    id_col, time_col, target_col : str, default "unique_id", "ds", "y"
        Column names of long frames, in and out.
"""
