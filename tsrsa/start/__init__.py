"""The statistical start of a neural forecaster: a fitted model's forecast as a linear map of the window.

``fit`` (``fit_start``: the AR start, "auto"'s choice among the candidates), ``ets`` and ``arima`` (the
ETS and ARIMA starts, fitted in numpy), ``maps`` (``StartMap``, the tails a fit reads, the kept fits),
and their algebra: ``differencing`` (KPSS, seasonal strength), ``batched_least_squares`` (many small
fits at once), ``power_series``. Numpy only, no torch: the estimator attaches the map to the network
(:mod:`tsrsa.estimator.started`, :mod:`tsrsa.nn.start`). See docs/statistical_start.md.
"""
