"""Options in groups: ``rem=tsrsa.REM(...)``, ``start=tsrsa.Start(...)``, ``covariates=tsrsa.Covariates(...)``,
RSA's ``attention_options`` and the trainer's loop options, each one argument (a dataclass or a dict).

The options' own arguments of 0.15 (``n_cyclic=2``, ``start_weight=0.5``, ...) still work until 0.19, with a
DeprecationWarning naming the new spelling, and fold into the same parameters and the same fitted model; a
group and one of its options given apart is a ValueError; ``set_params`` takes sklearn's nested names;
folders saved by earlier releases load silently.
"""
from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from sklearn.base import clone

import tsrsa
from tsrsa import (
    REM, Covariates, DLinearForecaster, LSTMForecaster, RSAForecaster, Start, Trainer, TransformerForecaster,
)

from conftest import make_panel

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NEURAL = [DLinearForecaster, LSTMForecaster, TransformerForecaster, RSAForecaster]
QUICK = dict(h=4, input_size=8, max_epochs=2, random_state=0)
#: a value other than the default for every old name of RSAForecaster, and the group option it becomes
OLD = {
    "n_regular": 2, "n_cyclic": 0, "n_dilated_regular": 0, "n_dilated_cyclic": 1, "dilations": 3, "gate": "head",
    "share_cyclic": False, "rem_mask": "bidirectional", "max_lag": 5, "gate_init": -1.0, "rem_init": "paper",
    "rem_learning_rate": 0.01, "cache_size": 8, "cache_policy": "sinks", "cache_sinks": 2, "t2r_features": 4,
    "start_learning_rate": 0.001, "start_margin": 2.0, "start_weight": 0.5, "past_covariates": ["x"],
    "future_covariates": ["z"], "static_covariates": ["s"], "calendar": "auto", "holidays": "US",
    "unknown_categories": "unknown", "covariate_norm": "fit", "batches_per_epoch": 3,
    "early_stopping_patience": 2, "inference_batch_size": 7,
}


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_rsa_takes_at_most_35_arguments_and_every_model_the_same_groups():
    counts = {cls.__name__: len(inspect.signature(cls).parameters) for cls in NEURAL}
    assert counts["RSAForecaster"] <= 35
    for cls in NEURAL:
        names = set(inspect.signature(cls).parameters)
        assert {"start", "covariates", "trainer"} <= names and not names & set(OLD), cls.__name__
    assert {"rem", "attention_options"} <= set(inspect.signature(RSAForecaster).parameters)
    assert all(name in dir(tsrsa) for name in ("REM", "Start", "Covariates", "Trainer"))


@pytest.mark.parametrize("old", sorted(OLD))
def test_an_old_name_warns_with_the_new_spelling_and_folds_into_its_group(old):
    group, field = RSAForecaster.moved_params[old]
    value = OLD[old]
    with pytest.warns(DeprecationWarning) as caught:
        model = RSAForecaster(h=4, **{old: value})
    text = str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller's line
    assert f"{old}= is deprecated" in text and "0.19" in text and f"pass {group}=" in text and repr(value) in text
    assert old not in model.get_params() and model.get_params()[group] == {field: value}
    with pytest.warns(DeprecationWarning, match=f"{old}= is deprecated"):
        model.set_params(**{old: value})
    assert model.get_params()[group] == {field: value}
    assert RSAForecaster(h=4, **{f"{group}": {field: value}}).get_params() == model.get_params()


def test_the_message_names_the_dataclass_and_keeps_a_named_start():
    with pytest.warns(DeprecationWarning, match=r"start_weight= is deprecated.*pass start=tsrsa.Start\(weight=0.5\)"):
        DLinearForecaster(h=4, start_weight=0.5)
    with pytest.warns(DeprecationWarning, match=r"pass start=tsrsa.Start\(kind='ar', weight=0.5\)"):
        model = DLinearForecaster(h=4, start="ar", start_weight=0.5)
    assert model.start == {"kind": "ar", "weight": 0.5} and model.resolved_start == Start(kind="ar", weight=0.5)
    with pytest.warns(DeprecationWarning, match=r"pass start=tsrsa.Start\(kind=None, weight=0.5\)"):
        assert DLinearForecaster(h=4, start=None, start_weight=0.5).resolved_start == Start(kind=None, weight=0.5)
    with pytest.warns(DeprecationWarning, match=r"pass rem=tsrsa.REM\(n_cyclic=2\)"):  # None: the defaults
        assert RSAForecaster(h=4, rem=None, n_cyclic=2).rem == {"n_cyclic": 2}
    with pytest.warns(DeprecationWarning, match=r"n_cyclic=, gate= are deprecated .* rem=tsrsa.REM\(n_cyclic=2, "
                                                r"gate='head'\)"):
        RSAForecaster(h=4, n_cyclic=2, gate="head")


def test_old_and_new_spellings_fit_the_same_model_bit_for_bit(no_warnings):
    df = make_panel(length=60).assign(x=lambda d: d["y"].shift(1).fillna(0.0))
    grouped = DLinearForecaster(**QUICK, val_size=4, start=Start(kind="ar", weight=0.5, margin=0.0),
                                covariates=Covariates(past=["x"], norm="fit"),
                                trainer=Trainer(batches_per_epoch=2, early_stopping_patience=1, inference_batch_size=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        flat = DLinearForecaster(**QUICK, val_size=4, start="ar", start_weight=0.5, start_margin=0.0,
                                 past_covariates=["x"], covariate_norm="fit", batches_per_epoch=2,
                                 early_stopping_patience=1, inference_batch_size=3)
    pd.testing.assert_frame_equal(flat.fit(df).predict(), grouped.fit(df).predict(), check_exact=True)
    assert flat.plan_ == grouped.plan_
    rem = RSAForecaster(**QUICK, d_model=8, rem=REM(n_cyclic=0, n_regular=2, init="paper", gate_init=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = RSAForecaster(**QUICK, d_model=8, n_cyclic=0, n_regular=2, rem_init="paper", gate_init=0.5)
    df = make_panel(length=60)
    pd.testing.assert_frame_equal(old.fit(df).predict(), rem.fit(df).predict(), check_exact=True)


def test_a_group_and_one_of_its_options_given_apart_are_refused():
    with pytest.raises(ValueError, match=r"n_cyclic and rem= are given together; give each option once, in rem"):
        RSAForecaster(h=4, rem=REM(gate="head"), n_cyclic=2)
    with pytest.raises(ValueError, match="given together"):
        DLinearForecaster(h=4, covariates={"past": ["x"]}, future_covariates=["z"])
    with pytest.raises(ValueError, match="given together"):
        DLinearForecaster(h=4, start=Start(weight=0.5), start_margin=1.0)
    model = RSAForecaster(h=4, rem={"n_cyclic": 2})
    with pytest.raises(ValueError, match="given together"):
        model.set_params(rem=REM(), rem__gate="head")
    with pytest.raises(ValueError, match="given together"):
        model.set_params(rem=REM(), gate="head")
    assert model.rem == {"n_cyclic": 2}  # a refused call changes nothing


def test_set_params_takes_sklearns_nested_names_and_mutates_nothing_given(no_warnings):
    given = {"n_cyclic": 2}
    model = RSAForecaster(h=4, rem=given)
    model.set_params(rem__gate="head", start__weight=0.25, covariates__future=["z"], trainer__num_threads=1,
                     attention_options__cache_size=8, d_model=16)
    assert given == {"n_cyclic": 2}  # the caller's dict is not changed
    assert model.rem == {"n_cyclic": 2, "gate": "head"} and model.start == {"weight": 0.25}
    assert model.covariates == {"future": ["z"]} and model.trainer == {"num_threads": 1}
    assert model.attention_options == {"cache_size": 8} and model.d_model == 16
    on_object = RSAForecaster(h=4, rem=REM(n_cyclic=2)).set_params(rem__gate="head")
    assert on_object.rem == REM(n_cyclic=2, gate="head")
    with pytest.raises(ValueError, match=r"rem has no option 'n_cycle'; did you mean 'n_cyclic'\?"):
        model.set_params(rem__n_cycle=3)
    with pytest.raises(ValueError, match="REM: gate='row' is not supported"):
        on_object.set_params(rem__gate="row")
    assert on_object.rem == REM(n_cyclic=2, gate="head")  # checked before anything is set
    with pytest.raises(ValueError, match="has no parameter 'remm__gate'"):
        model.set_params(remm__gate="head")


def test_get_params_returns_the_groups_and_clone_keeps_them(no_warnings):
    model = RSAForecaster(h=4, rem=REM(n_cyclic=2), start="ar", covariates={"future": ["z"]},
                          attention_options={"cache_size": 8}, trainer=Trainer(num_threads=1))
    params = model.get_params()
    assert params["rem"] == REM(n_cyclic=2) and params["start"] == "ar" and params["covariates"] == {"future": ["z"]}
    copy = clone(model)
    assert copy.get_params() == params
    assert repr(model).startswith("RSAForecaster(h=4, rem=REM(n_cyclic=2), attention_options={'cache_size': 8}")


@pytest.mark.parametrize("make, error, message", [
    (lambda: REM(gate="row"), ValueError, r"REM: gate='row' is not supported"),
    (lambda: REM(gate_init="half"), TypeError, r'REM: gate_init must be "auto" or a number'),
    (lambda: REM(init="random"), ValueError, r"REM: init='random' is not supported"),
    (lambda: Start(weight=2), ValueError, r"Start: weight=2 must be <= 1.0"),
    (lambda: Start(kind="arma"), ValueError, r"Start: kind='arma' is not supported"),
    (lambda: Covariates(norm="global"), ValueError, r"Covariates: norm='global' is not supported"),
    (lambda: Covariates(past=5), TypeError, r"Covariates: past=5 must be a column name"),
    (lambda: Trainer(inference_batch_size=0), ValueError, r"Trainer: inference_batch_size=0 must be >= 1"),
])
def test_a_bad_option_is_refused_naming_the_group_and_the_field(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("params, error, message", [
    (dict(rem={"gate": "row"}), ValueError, r"REM: gate='row'"),
    (dict(rem={"n_cycle": 2}), ValueError, r"rem has no option 'n_cycle'; did you mean 'n_cyclic'\?"),
    (dict(rem="paper"), TypeError, r"rem must be None, a tsrsa.REM or a dict of its options"),
    (dict(start={"weight": 2}), ValueError, r"Start: weight=2"),
    (dict(start="arma"), ValueError, r"start='arma' is not supported"),
    (dict(covariates={"norm": "global"}), ValueError, r"Covariates: norm='global'"),
    (dict(attention_options={"n_cyclic": 2}), ValueError,
     r"names the REM's option 'n_cyclic'; RSAForecaster takes it in rem"),
    (dict(attention_options={"cache_sise": 8}), ValueError, r"did you mean 'cache_size'"),
])
def test_a_bad_group_in_a_constructor_is_refused_at_fit_and_changes_nothing(params, error, message):
    model = RSAForecaster(**QUICK, d_model=8, **params)
    with pytest.raises(error, match=message):
        model.fit(make_panel(length=40))
    assert not hasattr(model, "network_")


@pytest.mark.parametrize("folder", sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("format_v*/*")
                                          if p.is_dir() and p.name != "naive"))
def test_a_folder_saved_with_the_old_names_loads_silently_into_the_groups(folder, tmp_path, no_warnings):
    path = FIXTURES / folder
    saved = json.loads((path / "config.json").read_text())["params"]
    model = tsrsa.load(path)
    params = model.get_params()
    old = set(type(model).moved_params)
    assert not set(params) & old and set(saved) & old  # saved one by one, loaded into the groups
    if "start_weight" in saved:
        assert model.resolved_start.weight == saved["start_weight"]
    if "gate_init" in saved:
        assert model.resolved_rem.gate_init == saved["gate_init"]
    if "past_covariates" in saved:
        assert model.resolved_covariates.past == saved["past_covariates"]
    model.save(tmp_path / "again")  # saved again in the new spelling, read back the same
    again = tsrsa.load(tmp_path / "again")
    future = None
    if model.declared_covariates().future:
        future = model.make_future_frame().fillna(0.0)
    pd.testing.assert_frame_equal(again.predict(future_df=future), model.predict(future_df=future), check_exact=True)


def test_the_flat_record_of_a_model_names_every_option_as_before(no_warnings):
    from tsrsa.estimator.trainer import flat_params

    flat = flat_params(RSAForecaster(h=4, rem={"n_cyclic": 2}, start="ar").get_params(), RSAForecaster)
    assert flat["n_cyclic"] == 2 and flat["start"] == "ar" and flat["start_weight"] == "auto"
    assert flat["rem_init"] == "data" and flat["cache_size"] is None and flat["past_covariates"] is None
    assert flat["batches_per_epoch"] == "auto" and flat["num_threads"] is None
    assert not {"rem", "covariates", "trainer", "attention_options"} & set(flat)


def test_the_benchmarks_helper_knows_every_old_name_and_writes_either_spelling(no_warnings):
    from tsrsa.benchmarking.compat import MOVED, grouped_kwargs

    assert MOVED == RSAForecaster.moved_params  # the helper imports no tsrsa: kept in step here
    params = {"h": 3, "n_cyclic": 2, "start": "ar", "start_weight": 0.5, "num_threads": 1, "cache_size": 8}
    assert grouped_kwargs(RSAForecaster, params) == {
        "h": 3, "start": {"kind": "ar", "weight": 0.5}, "rem": {"n_cyclic": 2}, "trainer": {"num_threads": 1},
        "attention_options": {"cache_size": 8}}
    assert grouped_kwargs(DLinearForecaster, {"past_covariates": ["x"], "trainer": Trainer(verbose=1),
                                              "batches_per_epoch": 2}) == {
        "covariates": {"past": ["x"]}, "trainer": Trainer(verbose=1, batches_per_epoch=2)}

    class Before016:  # a neural forecaster of tsrsa 0.15: the options are arguments of their own
        def __init__(self, h, start="auto", start_weight="auto", n_cyclic=1, trainer=None):
            pass

    rem = {old: getattr(REM(n_cyclic=2), field) for old, (group, field) in MOVED.items() if group == "rem"}
    assert grouped_kwargs(Before016, {"h": 3, "rem": REM(n_cyclic=2), "start": Start(kind="ar", weight=0.5)}) == {
        "h": 3, **rem, "start": "ar", "start_weight": 0.5, "start_margin": 0.0, "start_learning_rate": 0.0}


def test_the_nested_names_work_on_the_command_line(tmp_path, capsys, long_csv, no_warnings):
    from conftest import TINY_DLINEAR, run_cli

    status, _, err = run_cli(capsys, "fit", "--h", 6, "--input", long_csv, "--output", tmp_path / "a",
                             *TINY_DLINEAR, "-p", "start__weight=0.5", "-p", "trainer__batches_per_epoch=2",
                             "-p", "start_margin=0", "--quiet")
    assert status == 0, err
    model = tsrsa.load(tmp_path / "a")
    assert model.resolved_start == Start(weight=0.5, margin=0) and model.resolved_trainer.batches_per_epoch == 2
