"""pytorch-forecasting models with tsrsa's networks inside: ``RSATransformer`` and ``VanillaTransformer``.

Both are ``BaseModel`` subclasses of pytorch-forecasting 1.8: build one with ``from_dataset``,
train it with a lightning ``Trainer``, and use ``predict`` (modes "prediction", "quantiles",
"raw"), ``plot_prediction`` and ``load_from_checkpoint`` as with the library's own models. The
network inside, ``model.network``, is the ``tsrsa.nn.ForecastingTransformer`` that
``RSAForecaster`` / ``TransformerForecaster`` train, built and checked by those classes, with the
same argument names and defaults (``RSATransformer`` takes the REM's options as hyperparameters of
their own, as pytorch-forecasting's models take theirs, and starts them from ``rem_init="paper"``).

The model reads the target's encoder history, as the dataset's target normaliser scales it, and
returns forecasts in the target's units, with a fixed encoder length. The dataset's covariates map
onto the backbone's three kinds (``tsrsa.nn.covariates``; docs/covariates.md), as the dataset has
normalised them:

- ``time_varying_unknown_reals`` other than the target: past covariates (look-back channels);
- ``time_varying_known_reals``: known-future covariates (look-back channels and, from the decoder,
  the horizon's values, step by step);
- ``static_reals``: numeric statics; ``static_categoricals``: one embedding each.

Time-varying categoricals are not mapped: encode them as reals (one indicator column per category). Losses: the point losses MAE, RMSE, SMAPE, MAPE and MASE, and ``QuantileLoss``
(its quantiles increasing, with 0.5; the outputs are sorted, so quantiles never cross).

Needs the ``ptf`` extra: ``pip install 'tsrsa[ptf]'``.

Examples
--------
>>> import numpy as np, pandas as pd
>>> from pytorch_forecasting import TimeSeriesDataSet
>>> from tsrsa.integrations.pytorch_forecasting import RSATransformer
>>> frame = pd.DataFrame({"series": "a", "time_idx": np.arange(100), "y": np.sin(np.arange(100) / 4)})
>>> dataset = TimeSeriesDataSet(frame, time_idx="time_idx", target="y", group_ids=["series"],
...                             max_encoder_length=24, max_prediction_length=6,
...                             time_varying_unknown_reals=["y"])
>>> model = RSATransformer.from_dataset(dataset, d_model=16, patch_len=4)
>>> x, y = next(iter(dataset.to_dataloader(train=False, batch_size=8)))
>>> model(x)["prediction"].shape
torch.Size([8, 6, 1])
"""
from __future__ import annotations

import warnings

try:
    from pytorch_forecasting import TimeSeriesDataSet
    from pytorch_forecasting.data.encoders import NaNLabelEncoder
    from pytorch_forecasting.metrics import MAE, MAPE, MASE, RMSE, SMAPE, Metric, QuantileLoss
    from pytorch_forecasting.models.base import BaseModel
except ImportError as err:  # pragma: no cover - the extra is part of the dev install
    raise ImportError(
        f"tsrsa.integrations.pytorch_forecasting needs pytorch-forecasting 1.8 ({err}); "
        "install it with: pip install 'tsrsa[ptf]'"
    ) from err
import torch
from torch import nn

from tsrsa.forecasters.rsa import RSAForecaster
from tsrsa.forecasters.transformer import TransformerForecaster
from tsrsa.integrations.networks import ARCHITECTURE, build_network
from tsrsa.nn.covariates import CovariateBatch

#: losses whose single output per step is the forecast itself
POINT_LOSSES = (MAE, RMSE, SMAPE, MAPE, MASE)


class _BackboneModel(BaseModel):
    """What both models share: the dataset checks, the loss checks, forward and predict."""

    _forecaster: type  # the tsrsa estimator whose network and argument names the model takes

    def __init__(self, output_size: int = 1, loss: Metric | None = None,
                 logging_metrics: nn.ModuleList | None = None, covariate_layout: dict | None = None, **kwargs):
        if loss is None:
            loss = MAE()
        if logging_metrics is None:
            logging_metrics = nn.ModuleList([SMAPE(), MAE(), RMSE(), MAPE()])
        with warnings.catch_warnings():  # BaseModel stores its metric modules as hparams on purpose
            warnings.filterwarnings("ignore", message="Attribute '(loss|logging_metrics)' is an instance")
            super().__init__(loss=loss, logging_metrics=logging_metrics, **kwargs)
        _check_loss(self.loss, output_size)
        architecture = self._architecture()
        self.layout = dict(covariate_layout or {"target": 0})
        self.network = build_network(self._forecaster, h=self.hparams.prediction_length,
                                     input_size=self.hparams.context_length, n_outputs=output_size,
                                     covariates=_network_shape(self.layout), **architecture)

    def _architecture(self) -> dict:
        """The forecaster's architecture arguments (``tsrsa.integrations.networks.ARCHITECTURE``) from the hparams."""
        return {name: self.hparams[name] for name in ARCHITECTURE[self._forecaster]}

    @classmethod
    def from_dataset(cls, dataset: TimeSeriesDataSet, **kwargs):
        """A model for ``dataset``: look-back and horizon from its encoder and prediction lengths,
        the output size from ``loss`` (default MAE), the target's normaliser to restore units.

        Parameters
        ----------
        dataset : TimeSeriesDataSet
            The target alone as input (``time_varying_unknown_reals=[target]``), one target,
            ``min_encoder_length == max_encoder_length``.
        **kwargs
            Architecture arguments and BaseModel's (``loss``, ``learning_rate``, ``optimizer``, ...).
        """
        _check_dataset(dataset, cls.__name__)
        for name, source in (("context_length", "max_encoder_length"), ("prediction_length", "max_prediction_length")):
            if name in kwargs:
                raise TypeError(f"{name} comes from the dataset's {source}; build the dataset with the length "
                                f"you want instead of passing {name}")
        kwargs = {"context_length": dataset.max_encoder_length,
                  "prediction_length": dataset.max_prediction_length, "covariate_layout": covariate_layout(dataset),
                  **kwargs}
        kwargs.update(cls.deduce_default_output_parameters(dataset, kwargs, MAE()))
        return super().from_dataset(dataset, **kwargs)

    def forward(self, x: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        layout = self.layout
        window = x["encoder_cont"][..., layout["target"]]  # (B, L): the target, as normalised by the dataset
        inputs = window
        if _network_shape(layout):
            def pick(tensor, index):
                return tensor[..., index] if index else None

            past = pick(x["encoder_cont"], layout["past"] + layout["known"])  # (B, L, C)
            future = pick(x["decoder_cont"], layout["known"])  # (B, H, F)
            static_num = pick(x["encoder_cont"][:, 0], layout["static_reals"])  # (B, S_n)
            static_cat = pick(x["encoder_cat"][:, 0], layout["static_categoricals"])  # (B, S_c)
            inputs = CovariateBatch(window, past, future, static_num,
                                    static_cat + 1 if static_cat is not None else None)  # code 0: unknown
        y = self.network(inputs)  # (B, h, Q)
        prediction = self.transform_output(y, target_scale=x["target_scale"])  # (B, h, Q) in the target's units
        if isinstance(self.loss, QuantileLoss):
            prediction = prediction.sort(dim=-1).values  # quantiles never cross
        return self.to_network_output(prediction=prediction)

    def predict(self, data, mode="prediction", **kwargs):
        """``BaseModel.predict``, same arguments and modes, with a fresh ``trainer_kwargs`` dict.

        pytorch-forecasting adds its prediction callback to the dict it is given (so that a
        reused dict drops the callback on the next call); here it gets a copy, and the caller's
        dict is never changed. The prediction trainer logs nothing and prints no model summary
        unless ``trainer_kwargs`` says otherwise.
        """
        given = kwargs.pop("trainer_kwargs", None)
        if given is not None and not isinstance(given, dict):
            raise TypeError(f"trainer_kwargs must be a dict of lightning Trainer arguments, got {type(given).__name__}")
        trainer_kwargs = {"logger": False, "enable_model_summary": False, **(given or {})}
        if "callbacks" in trainer_kwargs:
            raise ValueError("trainer_kwargs['callbacks'] would displace pytorch-forecasting's prediction callback "
                             "(its predict then fails with an IndexError); leave callbacks out of predict")
        return super().predict(data, mode=mode, trainer_kwargs=trainer_kwargs, **kwargs)


class VanillaTransformer(_BackboneModel):
    """TransformerForecaster's network (patch tokens, softmax attention by default, direct
    multi-horizon head) as a pytorch-forecasting model; the twin of :class:`RSATransformer`, and any
    other attention kind by name (``attention="rsa"``, ...).

    Build it with :meth:`from_dataset`, which sets ``context_length``, ``prediction_length`` and
    ``output_size`` from the dataset and the loss (see the module docstring for what the dataset
    may hold).

    Parameters
    ----------
    context_length, prediction_length : int
        Look-back window and horizon (steps).
    d_model, n_heads, n_layers, d_ff, dropout, patch_len, causal, revin
        As in TransformerForecaster (defaults 64, 4, 2, 128, 0.1, 4, None: not causal, True).
    attention : str, default "softmax"
        The attention kind, one of ``tsrsa.nn.attention_kinds()``.
    attention_options : dict, optional
        The kind's own options, as TransformerForecaster takes them.
    output_size : int, default 1
        Values per step: 1 for a point loss, the number of quantiles for QuantileLoss.
    loss : pytorch_forecasting.metrics.Metric, optional
        MAE (default), RMSE, SMAPE, MAPE, MASE or QuantileLoss.
    logging_metrics : nn.ModuleList, optional
        Logged during training (default SMAPE, MAE, RMSE, MAPE).
    covariate_layout : dict, optional
        Set by ``from_dataset``: where the dataset's covariates sit in its tensors (see the module
        docstring); None reads the target alone.
    **kwargs
        BaseModel's: ``learning_rate``, ``optimizer``, ``weight_decay``, ``reduce_on_plateau_patience`` ...

    Attributes
    ----------
    network : tsrsa.nn.ForecastingTransformer
        The backbone: windows ``(B, context_length)`` in, ``(B, prediction_length, output_size)`` out.
    """

    _forecaster = TransformerForecaster

    def __init__(self, context_length: int, prediction_length: int, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, d_ff: int = 128, dropout: float = 0.1, patch_len: int = 4,
                 causal: bool | None = None, revin: bool = True, attention: str = "softmax",
                 attention_options: dict | None = None, output_size: int = 1, loss: Metric | None = None,
                 logging_metrics: nn.ModuleList | None = None, covariate_layout: dict | None = None, **kwargs):
        self.save_hyperparameters(ignore=["loss", "logging_metrics"])
        super().__init__(output_size=output_size, loss=loss, logging_metrics=logging_metrics,
                         covariate_layout=covariate_layout, **kwargs)


class RSATransformer(_BackboneModel):
    """RSAForecaster's network (the same backbone, attention with Recurrence Encoding Matrices) as
    a pytorch-forecasting model.

    Build it with :meth:`from_dataset` (see :class:`VanillaTransformer` and the module docstring).

    Parameters
    ----------
    context_length, prediction_length : int
        Look-back window and horizon (steps).
    d_model, n_heads, n_layers, d_ff, dropout, patch_len, causal, revin
        As in TransformerForecaster.
    n_regular, n_cyclic, n_dilated_regular, n_dilated_cyclic, dilations
        The REM heads of each layer, as in RSAForecaster (defaults 1, 1, 1, 0, None: 2 tokens).
    gate, share_cyclic, rem_mask, max_lag, gate_init
        As in RSAForecaster (defaults "layer", True, "causal", None, 0.0: RSAForecaster's "auto" gate
        reads the series of a tsrsa fit, and a network built without one starts at 0).
    rem_init : "paper" or dict, default "paper"
        The paper's initial REM values, or a dict of values as RSAForecaster takes. RSAForecaster's
        "data" initialisation estimates them during its own fit and is not offered here.
    output_size, loss, logging_metrics, **kwargs
        As in :class:`VanillaTransformer`.

    Attributes
    ----------
    network : tsrsa.nn.ForecastingTransformer
        The backbone with attention kind "rsa" (``network.blocks[i].attn`` is a ``tsrsa.nn.RSAAttention``).
    """

    _forecaster = RSAForecaster

    def __init__(self, context_length: int, prediction_length: int, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, d_ff: int = 128, dropout: float = 0.1, patch_len: int = 4,
                 causal: bool | None = None, revin: bool = True, n_regular: int = 1, n_cyclic: int = 1, n_dilated_regular: int = 1,
                 n_dilated_cyclic: int = 0, dilations: int | list[int] | None = None, gate: str = "layer",
                 share_cyclic: bool = True, rem_mask: str = "causal", max_lag: int | None = None,
                 gate_init: float = 0.0, rem_init: str | dict = "paper", output_size: int = 1,
                 loss: Metric | None = None, logging_metrics: nn.ModuleList | None = None,
                 covariate_layout: dict | None = None, **kwargs):
        self.save_hyperparameters(ignore=["loss", "logging_metrics"])
        super().__init__(output_size=output_size, loss=loss, logging_metrics=logging_metrics,
                         covariate_layout=covariate_layout, **kwargs)

    def _architecture(self) -> dict:
        """The backbone's arguments, and the REM's options gathered into RSAForecaster's ``rem``."""
        backbone = [name for name in ARCHITECTURE[RSAForecaster] if name not in ("rem", "attention_options")]
        rem = {field: self.hparams[_REM_HPARAMS.get(field, field)] for field in _REM_FIELDS}
        return {**{name: self.hparams[name] for name in backbone}, "rem": rem}


#: the REM options RSATransformer takes as hyperparameters of its own (pytorch-forecasting's flat hparams), and
#: the two whose names there differ from tsrsa.REM's fields
_REM_FIELDS = ("n_regular", "n_cyclic", "n_dilated_regular", "n_dilated_cyclic", "dilations", "gate", "share_cyclic",
               "mask", "max_lag", "gate_init", "init")
_REM_HPARAMS = {"mask": "rem_mask", "init": "rem_init"}


# ---------------------------------------------------------------------- checks
def _check_dataset(dataset, model: str) -> None:
    """What the backbone can read: one numeric target, its history alone, a fixed encoder length."""
    if not isinstance(dataset, TimeSeriesDataSet):
        raise TypeError(f"{model}.from_dataset needs a pytorch_forecasting.TimeSeriesDataSet, "
                        f"got {type(dataset).__name__}")
    if dataset.multi_target:
        raise ValueError(f"{model} forecasts one target; the dataset has {dataset.target_names}: "
                         f"build one dataset per target")
    if isinstance(dataset.target_normalizer, NaNLabelEncoder):
        raise ValueError(f"{model} forecasts a numeric target; {dataset.target!r} is categorical")
    if dataset.min_encoder_length != dataset.max_encoder_length:
        raise ValueError(f"{model} reads a fixed look-back; the dataset's encoder length varies from "
                         f"{dataset.min_encoder_length} to {dataset.max_encoder_length}: set "
                         f"min_encoder_length=max_encoder_length")
    if dataset.target not in dataset.reals:
        raise ValueError(f"{model} reads the target's history: add {dataset.target!r} to the dataset's "
                         f"time_varying_unknown_reals")
    varying = [name for name in dataset.flat_categoricals if name not in (dataset.static_categoricals or [])]
    if varying:
        raise ValueError(
            f"{model} maps static categoricals to embeddings but not time-varying ones; the dataset has {varying}: "
            f"encode them as reals (one indicator column per category) in time_varying_known_reals or "
            f"time_varying_unknown_reals")


def covariate_layout(dataset) -> dict:
    """Where the backbone finds each kind of covariate in the dataset's tensors: positions in
    ``dataset.reals`` (``encoder_cont``/``decoder_cont``) and ``dataset.flat_categoricals``
    (``encoder_cat``), and each static categorical's number of classes."""
    reals, cats = list(dataset.reals), list(dataset.flat_categoricals)
    static_categoricals = list(dataset.static_categoricals or [])
    encoders = dataset.get_parameters()["categorical_encoders"]  # the fitted ones
    # the lists with the variables the dataset adds itself (relative_time_idx, encoder_length, target scales)
    known_names = getattr(dataset, "_time_varying_known_reals", None) or dataset.time_varying_known_reals or []
    static_names = getattr(dataset, "_static_reals", None) or dataset.static_reals or []
    known = [reals.index(n) for n in known_names if n in reals]
    statics = [reals.index(n) for n in static_names if n in reals]
    taken = set(known) | set(statics) | {reals.index(dataset.target)}
    return {
        "target": reals.index(dataset.target),
        "past": [i for i in range(len(reals)) if i not in taken],
        "known": known,
        "static_reals": statics,
        "static_categoricals": [cats.index(n) for n in static_categoricals],
        "cardinalities": [len(encoders[n].classes_) + 1 for n in static_categoricals],
    }


def _network_shape(layout: dict) -> dict:
    """The backbone's covariate layout for a dataset's (empty: the target alone)."""
    n_past = len(layout.get("past", [])) + len(layout.get("known", []))
    shape = {"n_past": n_past, "n_future": len(layout.get("known", [])),
             "n_static": len(layout.get("static_reals", [])), "cardinalities": list(layout.get("cardinalities", []))}
    return shape if any([shape["n_past"], shape["n_static"], shape["cardinalities"]]) else {}


def _check_loss(loss, output_size: int) -> None:
    """A point loss with one output per step, or QuantileLoss with one per quantile."""
    if isinstance(loss, QuantileLoss):
        levels = list(loss.quantiles)
        if levels != sorted(set(levels)) or 0.5 not in levels:
            raise ValueError(f"QuantileLoss quantiles must increase and include 0.5 (the point forecast), "
                             f"got {levels}")
        expected = len(levels)
    elif isinstance(loss, POINT_LOSSES):
        expected = 1
    else:
        names = ", ".join(cls.__name__ for cls in POINT_LOSSES)
        raise TypeError(f"loss={loss!r} is not supported: use a point loss ({names}) or QuantileLoss; "
                        f"the network's outputs are values in the target's units, not distribution parameters")
    if output_size != expected:
        raise ValueError(f"output_size={output_size} but {type(loss).__name__} needs {expected}; build the "
                         f"model with from_dataset, which sets it from the loss")
