"""Every neural forecaster takes the same arguments, in the same order, with the same defaults."""
from __future__ import annotations

COMMON = [
    "h", "input_size", "patch_len", "loss", "quantiles", "scaler", "fill", "freq", "max_epochs",
    "batch_size", "inference_batch_size", "learning_rate", "weight_decay", "lr_schedule",
    "early_stopping_patience", "val_size", "conformal_windows",
    "accelerator", "devices", "strategy", "precision", "compile", "num_threads", "random_state", "verbose",
    "checkpoint_dir", "callbacks", "id_col",
    "time_col", "target_col",
]


def test_neural_classes_share_argument_names_order_and_defaults():
    import inspect

    from tsrsa.forecasters import FORECASTERS, NeuralForecaster

    neural = [c for c in FORECASTERS if issubclass(c, NeuralForecaster)]
    defaults = {}
    for cls in neural:
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
