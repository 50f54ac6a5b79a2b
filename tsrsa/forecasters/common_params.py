"""The arguments every neural forecaster shares, documented once.

Each forecaster's docstring holds a ``{common}`` mark that this text replaces, so ``help()`` and
the API pages show the whole argument list while the words live in one place.
"""

COMMON_PARAMS_DOC = """
    patch_len : int
        Steps per token (1 = one token per step; the LSTM reads one patch per step). REM lags
        count tokens. Defaults, chosen on accuracy and speed (benchmarks/RESULTS.md, "Default patch
        length"): 4 for the transformers and 8 for the LSTM.
    loss : {"mse", "mae", "huber", "quantile"}, default "mse"
        Training loss; "quantile" trains one output per level in ``quantiles``. Match it to how
        the forecasts are judged: "mae" for absolute errors (sMAPE, MASE; docs/benchmark_configuration.md
        has the M4 figures), "mse" for squared ones.
    quantiles : list of float, optional
        Levels in (0, 1) for ``loss="quantile"`` (default 0.1, 0.5, 0.9; 0.5 is always
        added and becomes ``yhat``). Columns are named ``yhat_q10``, ``yhat_q2.5``, ...
    scaler : {"standard", "robust", "minmax", "identity"} or None, default "standard"
        Per-series scaling fitted on each series' training part.
    fill : {"ffill", "interpolate", "zero"} or None, default None
        How to fill missing timestamps and NaN values; None makes them errors.
    freq : str or int, optional
        pandas offset alias ("h", "MS", ...) or integer step; inferred when None.
    max_epochs : int or "auto", default "auto"
        Passes over the training windows. "auto" scales them with the data: enough epochs for
        about 2,000 optimiser steps, at least 10 and at most 100 (10 on ETTh1 at input 96 with
        batch 32; 100 on a series of a few hundred steps). The fitted ``max_epochs_`` says how
        many were allowed, ``fit_history_`` how many ran.
    batch_size : int, default 32
        Training windows per optimisation step.
    batches_per_epoch : int, optional
        Optimisation steps per epoch: each epoch trains on this many batches drawn afresh from
        the shuffled training windows, as Lightning's ``limit_train_batches`` does (validation
        still reads every validation window). None: every training window once per epoch. For
        large panels, where one pass over every window is long; ``max_epochs="auto"`` then counts
        these batches. Not with training that carries the state across windows.
    inference_batch_size : int, default 1024
        Windows per forward pass in validation and prediction (bounds their memory).
    learning_rate : float, default 1e-3
    weight_decay : float, default 1e-4
        AdamW's decoupled weight decay.
    lr_schedule : {"cosine", "onecycle", "halving", "constant"} or None, default None
        "cosine" anneals to 0 over ``max_epochs``; "onecycle" warms up, then anneals;
        "halving" halves the rate after every epoch (Time-Series-Library's ``type1``).
    early_stopping_patience : int, "auto" or None, default "auto"
        Epochs without validation improvement before stopping; "auto": a fifth of the epochs,
        at least 3; None: off. Off without validation data (``val_size=0``). With validation the
        best epoch's weights are kept.
    val_size : int, default 0
        Trailing steps of each series held out for validation (0 or at least ``h``).
    accelerator : {"auto", "cpu", "gpu", "cuda", "mps"}, default "auto"
        "auto" uses CUDA when present.
    devices : int or list, optional
        Device count or indices. More than one trains data-parallel (DDP): ``devices=k`` runs
        k worker processes on this machine (k CPU processes, or CUDA devices 0..k-1 or the
        listed ones); each takes its part of every batch of ``batch_size`` windows.
    strategy : {"auto", "single_device", "ddp", "ddp_spawn"}, default "auto"
        How a fit runs. "auto": in this process on one device, spawned workers when
        ``devices`` asks for more ("ddp_spawn"), or, in a script launched by ``torchrun``
        (several ranks, one or more hosts), as this process's rank ("ddp"). Named
        explicitly, "ddp_spawn" spawns and "ddp" joins also for a world of one device, through
        the same DDP code as several. A script that spawns needs the
        ``if __name__ == "__main__":`` guard. Same seed and world size, same model; see
        ``examples/data_parallel.py``.
    precision : {"32", "bf16-mixed", "16-mixed"}, default "32"
    compile : bool or str, default False
        Train through ``torch.compile`` (True: its default backend; a string: that backend, such as
        "eager" or "aot_eager"). The first steps pay the compilation; predictions run the plain
        network. What it buys on a GPU: ``benchmarks/RESULTS.md``, section "On a GPU".
    num_threads : int, optional
        torch CPU threads during fit and predict (restored afterwards).
    random_state : int, optional
        Seed that makes a fit repeatable; the global random state is left untouched.
    verbose : int, default 0
        0 is silent; 1 shows one progress bar.
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
