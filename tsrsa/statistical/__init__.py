"""The statistical models, one series at a time: ETS, ARIMA and Theta fitted and run as plain values.

``ets_model``, ``arima_model`` (its orders chosen by ``arima_search``) and ``theta_model`` fit one
series (statsmodels, imported inside the functions that need it), filter new observations with fixed
parameters and forecast; ``series_fit`` holds what a fit leaves
(:class:`~tsrsa.statistical.series_fit.SeriesFit`: form, parameters, the filter state before the first
and after the last observation). Numpy and statsmodels only: the forecasters
(:mod:`tsrsa.forecasters.ets` ...) and their fitted state (:mod:`tsrsa.estimator.statistical_state`)
build on it, and so does the statistical start (:mod:`tsrsa.start`).
"""
