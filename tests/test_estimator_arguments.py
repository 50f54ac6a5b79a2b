"""Every neural forecaster takes the same arguments, in the same order, with the same defaults: the shared
part is written once (``COMMON_PARAMS``), each constructor is built from it, and the docs show all of it."""
from __future__ import annotations

import inspect

import pytest

COMMON = [
    "h", "input_size", "patch_len", "loss", "quantiles", "scaler", "start", "fill", "freq", "max_epochs",
    "batch_size", "learning_rate", "weight_decay", "lr_schedule", "val_size", "conformal_windows", "random_state",
    "trainer", "covariates", "id_col", "time_col", "target_col",
]
#: the trainer's options, arguments of their own before 0.15 (tsrsa.estimator.trainer)
TRAINER_OPTIONS = ("accelerator", "devices", "strategy", "precision", "compile", "num_threads", "callbacks",
                   "checkpoint_dir", "verbose")


def neural_classes():
    from tsrsa.forecasters import FORECASTERS, NeuralForecaster

    return [c for c in FORECASTERS if issubclass(c, NeuralForecaster)]


def test_neural_classes_share_argument_names_order_and_defaults():
    defaults = {}
    for cls in neural_classes():
        params = inspect.signature(cls.__init__).parameters
        names = [n for n in params if n != "self"]
        common = COMMON if "patch_len" in names else [n for n in COMMON if n != "patch_len"]
        assert [n for n in names if n in COMMON] == common, cls.__name__  # patch_len: token models
        assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in names[1:]), cls.__name__
        for name in common[1:]:
            if name == "patch_len":
                continue  # a per-model default (tokens are a model's own choice)
            defaults.setdefault(name, params[name].default)
            assert params[name].default == defaults[name], (cls.__name__, name)


def test_the_shared_part_is_written_once_and_each_signature_ends_with_it():
    from tsrsa.estimator.common_params import COMMON_PARAMS

    for cls in neural_classes():
        params = list(inspect.signature(cls).parameters.values())
        tail = [(p.name, p.default) for p in params[-len(COMMON_PARAMS):]]
        assert tail == list(COMMON_PARAMS), cls.__name__
        assert [p.name for p in params[:2]] == ["h", "input_size"], cls.__name__


def test_every_neural_signature_has_trainer_and_none_of_the_nine_flat_options():
    for cls in neural_classes():
        names = set(inspect.signature(cls).parameters)
        assert "trainer" in names and inspect.signature(cls).parameters["trainer"].default is None, cls.__name__
        assert not names & set(TRAINER_OPTIONS), (cls.__name__, names & set(TRAINER_OPTIONS))
        assert not any(p.kind is p.VAR_KEYWORD for p in inspect.signature(cls).parameters.values()), cls.__name__
        assert "trainer" in cls(h=2).get_params() and not set(cls(h=2).get_params()) & set(TRAINER_OPTIONS)


@pytest.mark.parametrize("cls", neural_classes(), ids=lambda c: c.__name__)
def test_the_docstring_documents_every_argument_of_the_signature(cls):
    doc = cls.__doc__.split("Parameters\n    ----------\n", 1)[1].split("Examples\n", 1)[0]
    documented = set()
    for line in doc.splitlines():
        if line.startswith("    ") and not line.startswith("     "):  # an entry: "name : type" or "a, b, c"
            documented.update(name.strip() for name in line.split(" : ")[0].split(","))
    missing = [name for name in inspect.signature(cls).parameters if name not in documented]
    assert not missing, (cls.__name__, missing)


def test_signature_lengths():
    """Counted as ``len(inspect.signature(cls).parameters)``: RSA had 69 in 0.14 (the trainer's nine among
    them) and 61 in 0.15 (the REM's, the start's, the covariates' and three of the loop's options since gathered
    into groups); the count only goes down."""
    import tsrsa

    counts = {name: len(inspect.signature(getattr(tsrsa, name)).parameters)
              for name in ("RSAForecaster", "TransformerForecaster", "LSTMForecaster", "DLinearForecaster")}
    assert counts == {"RSAForecaster": 35, "TransformerForecaster": 35, "LSTMForecaster": 27,
                      "DLinearForecaster": 23}
