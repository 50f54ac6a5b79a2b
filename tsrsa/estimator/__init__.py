"""The estimator's machinery, shared by every forecaster of :mod:`tsrsa.forecasters`.

- the contract: ``base`` (``BaseForecaster``: validate -> fit -> predict frames, update, save),
  ``protocol`` (sklearn's parameter protocol), ``params`` (argument checks), ``common_params`` and
  ``spaces`` (shared argument docs, tuning spaces);
- the two families: ``neural`` (``NeuralForecaster``: the fit of a network) with its parts ``plan`` /
  ``plan_ahead`` (the fit plan), ``outputs`` (the head's outputs), ``ensembles``, ``started`` (the
  statistical start attached to a network), ``fine_tuning``, ``sharded``; and ``statistical``
  (``StatisticalForecaster``: one statsmodels-style model per series);
- the fitted states: ``window_state``, ``stream_state`` (with ``stream_runs``), ``statistical_state``;
- what is built on a fitted model: ``conformal`` (intervals), ``crossval``, ``conveniences``, ``plotting``;
- saving: ``persistence`` (save, ``load_model``), ``model_folder`` (all-or-nothing folders),
  ``saved_checks`` (the files agree with one another).

Nothing here imports :mod:`tsrsa.forecasters`: the model classes build on this package, and
``tsrsa.load`` hands ``load_model`` the list of classes it may instantiate.
"""
