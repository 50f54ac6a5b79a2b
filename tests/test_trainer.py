"""Trainer options in one argument: ``tsrsa.Trainer`` (or a dict of its options) as ``trainer=``.

The nine flat arguments of 0.14 (``num_threads=2``) and the loop's three options of 0.15
(``batches_per_epoch``, ...) still work on their own, with a DeprecationWarning naming the new spelling,
until 0.19; folders saved with them load silently and the command line's ``-p num_threads=2`` maps onto
the trainer; the library itself never takes the old path on its own (tests/test_grouped_options.py).
"""
from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from sklearn.base import clone

import tsrsa
from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, Trainer, TransformerForecaster
from tsrsa.estimator.trainer import FIELDS, as_trainer, flat_params

from conftest import TINY_DLINEAR, make_panel, run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NEURAL = [DLinearForecaster, LSTMForecaster, TransformerForecaster, RSAForecaster]
QUICK = dict(h=4, input_size=8, max_epochs=2, random_state=0)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---------------------------------------------------------------------- the Trainer
def test_the_options_and_their_defaults():
    assert FIELDS == ("accelerator", "devices", "strategy", "precision", "compile", "num_threads", "callbacks",
                      "checkpoint_dir", "verbose", "batches_per_epoch", "early_stopping_patience",
                      "inference_batch_size")
    assert dataclasses.asdict(Trainer()) == {"accelerator": "auto", "devices": None, "strategy": "auto",
                                             "precision": "32", "compile": False, "num_threads": None,
                                             "callbacks": None, "checkpoint_dir": None, "verbose": 0,
                                             "batches_per_epoch": "auto", "early_stopping_patience": "auto",
                                             "inference_batch_size": 1024}
    assert repr(Trainer()) == "Trainer()" and repr(Trainer(num_threads=2)) == "Trainer(num_threads=2)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Trainer().num_threads = 2
    assert tsrsa.Trainer is Trainer and "Trainer" in tsrsa.__all__
    assert "num_threads" in Trainer.__doc__ and "checkpoint_dir" in Trainer.__doc__


@pytest.mark.parametrize("options, error, message", [
    (dict(accelerator="tpu"), ValueError, r"accelerator='tpu' is not supported; use one of"),
    (dict(devices=0), ValueError, r"devices=0 names no device"),
    (dict(devices="two"), TypeError, r"devices must be None, 'auto', a count or a list"),
    (dict(devices=[1, 1]), ValueError, r"devices=\[1, 1\] must list distinct"),
    (dict(accelerator="mps", devices=2), ValueError, r"use devices=1 with accelerator='mps'"),
    (dict(strategy="fsdp"), ValueError, r"strategy='fsdp' is not supported; use one of"),
    (dict(precision="8"), ValueError, r"precision='8' is not supported; use one of"),
    (dict(compile=1), TypeError, r"compile must be True, False or the name of a torch.compile backend"),
    (dict(num_threads=0), ValueError, r"num_threads=0 must be >= 1"),
    (dict(num_threads=1.5), TypeError, r"num_threads must be None or an int >= 1"),
    (dict(callbacks=print), TypeError, r"callbacks must be a list of callables"),
    (dict(callbacks=[1]), TypeError, r"callbacks must be a list of callables"),
    (dict(checkpoint_dir=5), TypeError, r"checkpoint_dir must be a folder path"),
    (dict(checkpoint_dir="ckpt", devices=2), ValueError, r"checkpoint_dir trains in one process"),
    (dict(verbose=-1), ValueError, r"verbose=-1 must be >= 0"),
    (dict(verbose="yes"), TypeError, r"verbose must be an int >= 0"),
])
def test_trainer_refuses_a_bad_option_naming_it_and_the_fix(options, error, message):
    with pytest.raises(error, match=r"^Trainer: .*" + message):
        Trainer(**options)
    model = DLinearForecaster(h=4, trainer=options)  # a dict: checked at fit, as every argument is
    with pytest.raises(error, match=message):
        model.fit(make_panel())


def test_a_dict_is_converted_and_its_unknown_keys_refused_with_a_hint():
    assert as_trainer({"num_threads": 2, "verbose": 1}) == Trainer(num_threads=2, verbose=1)
    assert as_trainer(None) == Trainer()
    with pytest.raises(ValueError, match=r"trainer has no option 'num_thread'; did you mean 'num_threads'\?"):
        as_trainer({"num_thread": 2})
    with pytest.raises(ValueError, match=r"trainer has no option 'max_epochs'.*accelerator, devices"):
        DLinearForecaster(h=4, trainer={"max_epochs": 2}).fit(make_panel())
    with pytest.raises(TypeError, match=r"trainer must be None, a tsrsa.Trainer or a dict of its options"):
        DLinearForecaster(h=4, trainer="cpu").fit(make_panel())
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'num_thread'; did you mean "
                                        r"trainer=\{'num_threads': 2\}"):
        RSAForecaster(h=4, num_thread=2)


# ---------------------------------------------------------------------- the estimators' argument
@pytest.mark.parametrize("cls", NEURAL, ids=lambda c: c.__name__)
def test_trainer_is_a_parameter_kept_as_given(cls, no_warnings):
    given = {"num_threads": 1}
    model = cls(h=4, trainer=given)
    assert model.get_params()["trainer"] is given and model.resolved_trainer == Trainer(num_threads=1)
    assert clone(model).get_params()["trainer"] == given and model.clone().get_params()["trainer"] == given
    options = Trainer(verbose=1)
    assert clone(cls(h=4, trainer=options)).resolved_trainer == options
    assert cls(h=4).get_params()["trainer"] is None and cls(h=4).resolved_trainer == Trainer()
    assert repr(cls(h=4, trainer=Trainer(num_threads=2))) == f"{cls.__name__}(h=4, trainer=Trainer(num_threads=2))"


@pytest.mark.parametrize("cls", NEURAL, ids=lambda c: c.__name__)
def test_a_flat_option_of_0_14_still_folds_into_the_trainer_with_a_warning(cls):
    for name, value in (("num_threads", 2), ("verbose", 1), ("precision", "bf16-mixed"), ("callbacks", [])):
        with pytest.warns(DeprecationWarning, match=rf"{name}= is deprecated \(the old spelling goes in tsrsa 0.19\); "
                                                    rf"pass trainer=tsrsa.Trainer\({name}="):
            model = cls(h=4, **{name: value})
        assert model.get_params()["trainer"] == {name: value} and name not in model.get_params()
        with pytest.warns(DeprecationWarning, match=rf"pass trainer=tsrsa.Trainer\("):
            model.set_params(num_threads=3)
        assert model.get_params()["trainer"] == {**{name: value}, "num_threads": 3}
    model = cls(h=4, trainer={"num_threads": 2})
    with pytest.raises(ValueError, match="given together"):
        cls(h=4, trainer=Trainer(verbose=1), precision="bf16-mixed")
    assert model.get_params()["trainer"] == {"num_threads": 2}
    assert not hasattr(model, "num_threads")  # not read as an attribute of its own
    model.set_params(trainer__num_threads=3)  # sklearn's nested name
    assert model.resolved_trainer.num_threads == 3


def test_flat_and_trainer_spellings_fit_the_same_model_bit_for_bit(no_warnings):
    df = make_panel(length=60)
    default = DLinearForecaster(**QUICK).fit(df).predict()
    spelled = DLinearForecaster(**QUICK, trainer=Trainer(num_threads=1, precision="32")).fit(df).predict()
    as_dict = DLinearForecaster(**QUICK, trainer={"num_threads": 1, "precision": "32"})
    pd.testing.assert_frame_equal(as_dict.fit(df).predict(), spelled, check_exact=True)
    pd.testing.assert_frame_equal(default, spelled, check_exact=True)


def test_the_fit_reads_the_trainer(capsys, no_warnings):
    seen = []
    model = DLinearForecaster(**QUICK, trainer={"callbacks": [seen.append], "verbose": 1}).fit(make_panel())
    assert len(seen) == len(model.fit_history_) == 2
    assert "DLinearForecaster fit plan" in capsys.readouterr().err
    assert model.plan_.threads == 1 and model.plan_.device == "cpu"
    assert DLinearForecaster(h=4, trainer={"num_threads": 2}).plan(make_panel()).threads == 2


def test_flat_params_names_the_options_as_0_14_did():
    params = DLinearForecaster(h=4, trainer={"num_threads": 2}).get_params()
    flat = flat_params(params)
    assert "trainer" not in flat and flat["num_threads"] == 2 and flat["accelerator"] == "auto"
    assert set(flat) == (set(params) - {"trainer"}) | set(FIELDS)


# ---------------------------------------------------------------------- saved folders
@pytest.mark.parametrize("folder", sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("format_v*/*")
                                          if p.is_dir() and p.name != "naive"))
def test_a_folder_saved_with_the_flat_options_loads_without_a_warning(folder, no_warnings):
    path = FIXTURES / folder
    saved = json.loads((path / "config.json").read_text())["params"]
    assert "trainer" not in saved and "verbose" in saved  # the old spelling
    model = tsrsa.load(path)
    assert "trainer" in model.get_params() and not set(model.get_params()) & set(FIELDS)
    assert model.resolved_trainer.verbose == saved["verbose"]
    assert model.resolved_trainer.num_threads == saved["num_threads"]
    model.predict()


def test_a_new_save_stores_the_trainer_as_one_object(tmp_path, no_warnings):
    df = make_panel()
    model = DLinearForecaster(**QUICK, trainer=Trainer(num_threads=1, callbacks=[print],
                                                       checkpoint_dir=tmp_path / "ckpt")).fit(df)
    model.save(tmp_path / "m")
    params = json.loads((tmp_path / "m" / "config.json").read_text())["params"]
    assert not set(params) & set(FIELDS)
    assert params["trainer"] == {"accelerator": "auto", "devices": None, "strategy": "auto", "precision": "32",
                                 "compile": False, "num_threads": 1, "callbacks": None,
                                 "checkpoint_dir": str(tmp_path / "ckpt"), "verbose": 0,
                                 "batches_per_epoch": "auto", "early_stopping_patience": "auto",
                                 "inference_batch_size": 1024}
    loaded = tsrsa.load(tmp_path / "m")
    assert loaded.resolved_trainer == Trainer(num_threads=1, checkpoint_dir=str(tmp_path / "ckpt"))
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())
    loaded.save(tmp_path / "again")  # a loaded model's trainer, a dict, saves as it was read
    again = json.loads((tmp_path / "again" / "config.json").read_text())["params"]
    assert again["trainer"] == params["trainer"]
    given = {"num_threads": 1, "callbacks": [print]}  # a dict: its options, the callbacks left out
    DLinearForecaster(**QUICK, trainer=given).fit(df).save(tmp_path / "dict")
    assert json.loads((tmp_path / "dict" / "config.json").read_text())["params"]["trainer"] == {
        "num_threads": 1, "callbacks": None}
    DLinearForecaster(**QUICK).fit(df).save(tmp_path / "default")  # None, the defaults, loads as None
    assert json.loads((tmp_path / "default" / "config.json").read_text())["params"]["trainer"] is None
    assert tsrsa.load(tmp_path / "default").get_params()["trainer"] is None


# ---------------------------------------------------------------------- the command line
def test_the_command_line_maps_its_options_onto_the_trainer(tmp_path, capsys, long_csv, no_warnings):
    status, _, err = run_cli(capsys, "fit", "--h", 6, "--input", long_csv, "--output", tmp_path / "a",
                             *TINY_DLINEAR, "-p", "num_threads=1", "--verbose", "--quiet")
    assert status == 0, err
    assert tsrsa.load(tmp_path / "a").resolved_trainer == Trainer(num_threads=1, verbose=1)
    status, _, err = run_cli(capsys, "fit", "--h", 6, "--input", long_csv, "--output", tmp_path / "b",
                             *TINY_DLINEAR, "-p", 'trainer={"num_threads": 1}', "--quiet")
    assert status == 0, err
    assert tsrsa.load(tmp_path / "b").resolved_trainer == Trainer(num_threads=1)
    status, _, err = run_cli(capsys, "fit", "--h", 6, "--input", long_csv, "--output", tmp_path / "c",
                             *TINY_DLINEAR, "-p", "num_threads=0", "--quiet")
    assert status == 2 and "-p num_threads=0 must be >= 1" in err


# ---------------------------------------------------------------------- what builds on the estimator
def test_the_tuner_reads_the_trainer_and_refuses_a_shared_checkpoint_folder(tmp_path, no_warnings):
    pytest.importorskip("optuna")
    model = DLinearForecaster(**QUICK, trainer=Trainer(checkpoint_dir=tmp_path))
    with pytest.raises(ValueError, match="a trainer's checkpoint_dir would be shared by all of them"):
        tsrsa.tune(model, make_panel(length=60), n_trials=1)
    assert list(tmp_path.iterdir()) == []


def test_the_library_takes_the_new_spelling_on_every_path(tmp_path, no_warnings):
    """clone, cross-validation with refits and intervals, fine-tuning and the statistical start's paths never
    pass a flat option on their own (every warning an error here)."""
    df = make_panel(length=80)
    model = DLinearForecaster(**QUICK, conformal_windows=2, trainer={"num_threads": 1})
    cv = model.cross_validate(df, n_windows=2, refit=True, level=[80])
    assert cv["yhat_lo_80"].notna().all()
    fitted = model.fit(df)
    tuned = fitted.fine_tune(df, max_epochs=1)
    assert tuned.resolved_trainer == Trainer(num_threads=1)
    fitted.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert loaded.resolved_trainer == Trainer(num_threads=1) and loaded.get_params()["trainer"] == {"num_threads": 1}
    assert loaded.predict(level=[80])["yhat_hi_80"].notna().all()


@pytest.mark.filterwarnings("ignore:the original TransformerForecaster is not in the streaming configuration")
def test_to_recurrent_takes_a_trainer_option_by_its_nested_name():
    from tsrsa.convert import to_recurrent

    df = make_panel(length=60)
    original = TransformerForecaster(h=4, input_size=8, d_model=8, n_heads=2, n_layers=1, d_ff=8, max_epochs=1,
                                     random_state=0, trainer={"num_threads": 1}).fit(df)
    with pytest.warns(DeprecationWarning, match=r"to_recurrent: verbose= is deprecated .* pass trainer=tsrsa.Trainer"):
        flat = to_recurrent(original, df, feature_size=4, verbose=0)
    converted = to_recurrent(original, df, feature_size=4, trainer__verbose=0)
    assert converted.resolved_trainer == flat.resolved_trainer == Trainer(num_threads=1)
