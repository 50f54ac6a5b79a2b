"""The arguments every neural forecaster shares, written once: their names and defaults, and their words.

A neural forecaster's signature is ``h, *, input_size=None``, its own arguments (architecture, then
``patch_len``), then :data:`COMMON_PARAMS` in that order: :func:`neural_init` builds the constructor from
the two tuples, so that every model takes the shared arguments under the same names, in the same order,
with the same defaults, without a copy to keep aligned. Each forecaster's docstring holds a ``{common}``
mark that :data:`COMMON_PARAMS_DOC` replaces, so ``help()`` and the API pages show the whole argument
list while the words live in one place.
"""
from tsrsa.estimator.protocol import keyword_init

#: the arguments every neural forecaster takes after its own, in this order, with these defaults
COMMON_PARAMS = (
    # the output: loss, levels, scaling, the statistical start, members
    ("loss", "mae"), ("quantiles", None), ("scaler", "standard"),
    ("start", "auto"), ("start_learning_rate", 0.0), ("start_margin", 0.0), ("start_weight", "auto"),
    ("ensemble_size", 1),
    # the data's grid
    ("fill", None), ("freq", None),
    # the optimisation: budget, batches, optimiser, schedule, validation, intervals, seed
    ("max_epochs", "auto"), ("batch_size", 32), ("batches_per_epoch", "auto"), ("inference_batch_size", 1024),
    ("learning_rate", 1e-3), ("weight_decay", 1e-4), ("lr_schedule", "onecycle"),
    ("early_stopping_patience", "auto"), ("val_size", 0), ("conformal_windows", None), ("random_state", None),
    # where and how it trains: one tsrsa.Trainer (tsrsa.estimator.trainer)
    ("trainer", None),
    # covariates
    ("past_covariates", None), ("future_covariates", None), ("static_covariates", None), ("calendar", None),
    ("holidays", None), ("unknown_categories", "raise"), ("covariate_norm", None),
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
    start : {"ar", "ets", "arima", "auto"} or None, default "auto"
        A statistical start: the network's forecast is a fitted statistical model's point forecast
        plus the network's correction, which starts at zero, so that the untrained model forecasts as
        the statistical one and training moves away from it only where the data say so. "ar": an
        autoregression on levels or first differences (pooled over the series, order by AIC); "ets":
        additive exponential smoothing; "arima": a seasonal ARIMA with automatic orders (per series);
        "auto": the candidates "ar" and "ets", and "arima" too for one series when ``max_epochs`` is
        "auto" and the training windows are fewer than 2,000 (a short series, as for
        ``ensemble_size``), keeping the one with the lowest error on the validation windows (on the
        training parts' last windows when ``val_size=0``). Each is written as a linear map of the scaled window
        (:mod:`tsrsa.start.fit`; fitted as ``start_``). A named model refuses ``stream=True``
        and a distribution loss; "auto" fits no start there (``start_`` is None). None: the network
        alone. The default, "auto", was chosen on validation over long-horizon data, a panel of many
        series and short series, and its candidates on nested validation
        (docs/benchmark_configuration.md; docs/statistical_start.md).
    start_learning_rate : float, default 0.0
        The statistical start's own learning rate; 0 keeps it as fitted.
    start_margin : float, default 0.0
        With a statistical start and validation data, the trained network replaces the start only
        when its validation loss beats the start's by more than this many standard errors of the
        mean per-window difference (Newey-West, lag ``h - 1``: the windows overlap); otherwise the
        fit goes back to the start (``best_epoch_`` 0) and ``start_["edge"]`` records the network's
        edge. 0: the best validation epoch, the start counting as epoch 0. A margin of 2 was screened
        on nested validation and not made the default (docs/statistical_start.md, "When the network
        replaces the start").
    start_weight : float in [0, 1] or "auto", default "auto"
        With a statistical start, the start's weight in the forecast: the trained network's forecast
        ``S + C`` (the start plus the network's correction) becomes ``S + (1 - start_weight) C``, a
        combination of the two forecasts, made by scaling the network's output layers once training
        ends (``start_["start_weight"]`` records it; a fine-tune keeps its source's). 0: the network
        as trained; 1: the start alone. "auto": 0.5 when ``max_epochs`` is "auto" and the training
        windows are fewer than 2,000 (a short series, where the correction is chosen on a few
        validation windows), else 0; chosen on nested validation over the short series
        (docs/statistical_start.md, "A combination of start and network"). A quantile loss learns its
        levels' spread in the correction: "auto" gives it 0 and a weight above 0 is refused.
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
    batches_per_epoch : int, "auto" or None, default "auto"
        Optimisation steps per epoch: each epoch trains on this many batches drawn afresh from
        the shuffled training windows, as Lightning's ``limit_train_batches`` does (validation
        still reads every validation window). None: every training window once per epoch. "auto":
        the rule of ``max_epochs="auto"`` (every window when ``max_epochs`` is a number). A number
        is not allowed with training that carries the state across windows.
    inference_batch_size : int, default 1024
        Windows per forward pass in validation and prediction (bounds their memory).
    learning_rate : float, default 1e-3
    weight_decay : float, default 1e-4
        AdamW's decoupled weight decay.
    lr_schedule : {"cosine", "onecycle", "halving", "constant"} or None, default "onecycle"
        "cosine" anneals to 0 over ``max_epochs``; "onecycle" warms up to ``learning_rate``, then
        anneals over the budget; "halving" halves the rate after every epoch (Time-Series-Library's
        ``type1``); None or "constant": ``learning_rate`` throughout.
    early_stopping_patience : int, "auto" or None, default "auto"
        Epochs without validation improvement before stopping; "auto": a fifth of the epochs,
        at least 3; None: off. Off without validation data (``val_size=0``). With validation the
        best epoch's weights are kept.
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
        precision=..., compile=..., num_threads=..., callbacks=..., checkpoint_dir=..., verbose=...)``
        or a dict of those options (``{"num_threads": 2}``); None: ``Trainer()``, the CPU or CUDA when
        present, one process, float32, one CPU thread, silent (:class:`tsrsa.Trainer` documents each
        option). Until tsrsa 0.16 the options are also taken as arguments of their own
        (``num_threads=2``), with a DeprecationWarning, and folded in here.
    past_covariates : list of str, optional
        Columns of a long frame known up to each series' end (docs/covariates.md). Numeric, or
        categorical (pandas ``category`` or strings: one indicator per category).
    future_covariates : list of str, optional
        Columns known for the horizon too: ``predict(future_df=...)`` gives their next ``h`` values.
    static_covariates : list of str, optional
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
    covariate_norm : {"window", "fit"}, optional
        How numeric covariates are scaled over the look-back: "window", by their own mean and spread
        in each window (as RevIN does for the target), so that a driver whose level shifts after
        training does not move the forecast; "fit", by the training part's statistics alone. The
        horizon's known-future values keep the training part's scaling either way. None: "window",
        or "fit" in the streaming configuration (which has no window). Chosen on validation in
        ``benchmarks/covariates.py``.
    id_col, time_col, target_col : str, default "unique_id", "ds", "y"
        Column names of long frames, in and out.
"""
