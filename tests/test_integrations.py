"""The integrations: pytorch-forecasting models with tsrsa's networks inside, and the
Time-Series-Library adapter (shapes, channel independence, one optimisation step)."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import RSAForecaster, TransformerForecaster
from tsrsa.integrations import tslib
from tsrsa.integrations.networks import ARCHITECTURE
from tsrsa.nn import ForecastingTransformer, RSAAttention, SoftmaxAttention

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*does not have many workers", "ignore:.*LeafSpec.*is deprecated", "ignore:.*weights_only.*",
)


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---------------------------------------------------------------------- Time-Series-Library
def _configs(**changes) -> SimpleNamespace:
    base = dict(task_name="long_term_forecast", seq_len=32, label_len=16, pred_len=8, enc_in=3, c_out=3, d_model=16,
                n_heads=4, e_layers=1, d_ff=32, dropout=0.0, use_norm=1, moving_avg=25, patch_len=16)
    return SimpleNamespace(**{**base, **changes})


@pytest.mark.parametrize("cls, attention", [(tslib.Model, RSAAttention), (tslib.VanillaModel, SoftmaxAttention)])
@pytest.mark.parametrize("c_out", [3, 1])
def test_tslib_model_contract_shapes(cls, attention, c_out):
    model = cls(_configs(c_out=c_out))
    x_enc, x_mark_enc = torch.randn(5, 32, 3), torch.randn(5, 32, 4)
    x_dec, x_mark_dec = torch.zeros(5, 16 + 8, 3), torch.randn(5, 16 + 8, 4)
    out = model(x_enc, x_mark_enc, x_dec, x_mark_dec)
    assert out.shape == (5, 8, c_out)
    assert torch.isfinite(out).all()
    assert isinstance(model.network, ForecastingTransformer)
    assert all(isinstance(block.attn, attention) for block in model.network.blocks)
    assert model.network.config.patch_len == 4  # tsrsa's default, not the runner's TimeXer flag
    assert model.label_len == 16


def test_tslib_channels_are_independent_and_normalised_per_instance():
    torch.manual_seed(0)
    model = tslib.Model(_configs()).eval()
    x = torch.randn(4, 32, 3)
    with torch.no_grad():
        out = model(x, None, None, None)
        moved = x.clone()
        moved[..., 0] = 10 * moved[..., 0] + 3  # another level and scale in channel 0 only
        out_moved = model(moved, None, None, None)
    torch.testing.assert_close(out_moved[..., 1:], out[..., 1:])  # the other channels do not see it
    torch.testing.assert_close(out_moved[..., 0], 10 * out[..., 0] + 3, rtol=1e-4, atol=1e-3)  # RevIN
    last = tslib.Model(_configs(c_out=1)).eval()
    last.load_state_dict(model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(last(x, None, None, None), out[..., -1:])  # 'MS': the last channel


@pytest.mark.parametrize("cls", [tslib.Model, tslib.VanillaModel])
def test_tslib_one_optimisation_step_lowers_the_loss(cls):
    torch.manual_seed(0)
    model = cls(_configs())
    t = torch.arange(40, dtype=torch.float32)
    series = torch.stack([torch.sin(t / 3 + k) for k in range(12)])[:, :, None].repeat(1, 1, 3)  # (12, 40, 3)
    x, y = series[:, :32], series[:, 32:]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    loss = torch.nn.functional.mse_loss(model(x, None, None, None), y)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        after = torch.nn.functional.mse_loss(model(x, None, None, None), y)
    assert after < loss.detach()
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert "network.head.linear.weight" in changed
    if cls is tslib.Model:
        assert "network.blocks.0.attn.eta" in changed  # the REM heads learn too


def test_tslib_reads_options_and_rejects_what_it_cannot_serve():
    model = tslib.Model(_configs(use_norm=0, e_layers=3), patch_len=8, rem={"mask": "bidirectional"})
    config = model.network.config
    assert (config.patch_len, config.n_layers, config.revin) == (8, 3, False)
    assert config.attention_options["rem_mask"] == "bidirectional"
    with pytest.raises(TypeError, match="configs lacks \\['d_ff'\\]"):
        tslib.Model(SimpleNamespace(**{k: v for k, v in vars(_configs()).items() if k != "d_ff"}))
    with pytest.raises(ValueError, match="task_name='classification'"):
        tslib.Model(_configs(task_name="classification"))
    with pytest.raises(ValueError, match="c_out=4 must lie in"):
        tslib.Model(_configs(c_out=4))
    with pytest.raises(TypeError, match="unknown architecture argument.*n_regular"):
        tslib.VanillaModel(_configs(), n_regular=1)
    with pytest.raises(ValueError, match="n_heads=2"):
        tslib.Model(_configs(n_heads=2))
    with pytest.raises(ValueError, match="init='data'"):
        tslib.Model(_configs(), rem={"init": "data"})
    with pytest.raises(ValueError, match="x_enc must be"):
        tslib.Model(_configs())(torch.randn(2, 31, 3), None, None, None)


def test_tslib_time_marks_are_known_future_covariates_of_every_channel():
    torch.manual_seed(0)
    model = tslib.VanillaModel(_configs(freq="h", embed="timeF"), time_marks=True).eval()
    assert model.network.config.covariates == {"n_past": 4, "n_future": 4}
    x_enc = torch.randn(2, model.seq_len, model.enc_in)
    marks_enc = torch.randn(2, model.seq_len, 4)
    marks_dec = torch.randn(2, model.label_len + model.pred_len, 4)
    with torch.no_grad():
        base = model(x_enc, marks_enc, None, marks_dec)
        moved = marks_dec.clone()
        moved[:, -1] += 1.0  # the last horizon step's marks only
        changed = model(x_enc, marks_enc, None, moved)
        early = marks_dec.clone()
        early[:, : model.label_len] += 1.0  # the decoder's label part is not read
        same = model(x_enc, marks_enc, None, early)
    assert base.shape == (2, model.pred_len, model.c_out)
    differs = (changed - base).abs().amax(dim=(0, 2))
    assert differs[-1] > 0 and torch.all(differs[:-1] == 0) and torch.equal(same, base)
    with pytest.raises(ValueError, match="x_mark_dec of shape"):
        model(x_enc, marks_enc, None, None)
    with pytest.raises(ValueError, match="configs.embed='timeF'"):
        tslib.Model(_configs(freq="h", embed="fixed"), time_marks=True)
    assert tslib.Model(_configs(), time_marks=True, n_marks=2).n_marks == 2


def test_rem_init_values_reach_every_layer():
    model = tslib.Model(_configs(e_layers=2), rem={"init": {"lambda": 0.5, "gate": 1.0}})
    for block in model.network.blocks:
        radius, _ = block.attn.rem_parameters()
        assert radius[0].item() == pytest.approx(0.5)
        assert block.attn.mu.item() == pytest.approx(1.0)


# ---------------------------------------------------------------------- pytorch-forecasting
@pytest.fixture(scope="module")
def ptf():
    return pytest.importorskip("pytorch_forecasting")


@pytest.fixture(scope="module")
def toy(ptf):
    """Two noisy seasonal series: a training set and the last window of each for prediction."""
    rng = np.random.default_rng(0)
    t = np.arange(90)
    frame = pd.concat([pd.DataFrame({"series": sid, "time_idx": t,
                                     "y": 10 * (k + 1) + np.sin(2 * np.pi * t / 8) + 0.1 * rng.standard_normal(90)})
                       for k, sid in enumerate(["a", "b"])], ignore_index=True)
    train = ptf.TimeSeriesDataSet(frame[frame["time_idx"] < 80], time_idx="time_idx", target="y",
                                  group_ids=["series"], max_encoder_length=16, max_prediction_length=4,
                                  time_varying_unknown_reals=["y"])
    last = ptf.TimeSeriesDataSet.from_dataset(train, frame, predict=True, stop_randomization=True)
    return train, last


def _trainer(tmp_path=None, **options):
    import lightning.pytorch as pl

    return pl.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                      enable_model_summary=False, enable_checkpointing=tmp_path is not None,
                      default_root_dir=tmp_path, **options)


def test_ptf_model_trains_one_epoch_predicts_and_reloads_from_its_checkpoint(toy, tmp_path):
    import lightning.pytorch as pl

    from tsrsa.integrations.pytorch_forecasting import RSATransformer

    train, last = toy
    torch.manual_seed(0)
    model = RSATransformer.from_dataset(train, d_model=8, n_heads=4, d_ff=16, patch_len=4, learning_rate=1e-2)
    start = {name: p.detach().clone() for name, p in model.named_parameters()}
    checkpoint = pl.callbacks.ModelCheckpoint(dirpath=tmp_path)
    trainer = _trainer(tmp_path, callbacks=[checkpoint])
    trainer.fit(model, train_dataloaders=train.to_dataloader(train=True, batch_size=16),
                val_dataloaders=last.to_dataloader(train=False, batch_size=16))
    assert not torch.equal(model.network.head.linear.weight, start["network.head.linear.weight"])
    assert not torch.equal(model.network.blocks[0].attn.eta, start["network.blocks.0.attn.eta"])

    forecast = model.predict(last)
    assert forecast.shape == (2, 4) and torch.isfinite(forecast).all()
    assert (forecast[1] > forecast[0]).all()  # the series' levels (10 and 20) come back in the target's units

    reloaded = RSATransformer.load_from_checkpoint(checkpoint.best_model_path)
    torch.testing.assert_close(reloaded.predict(last), forecast, rtol=0, atol=0)
    assert reloaded.hparams.d_model == 8 and isinstance(reloaded.network.blocks[0].attn, RSAAttention)


def test_ptf_network_is_the_forecasters_network(toy):
    from tsrsa.integrations.pytorch_forecasting import RSATransformer, VanillaTransformer

    train, _ = toy
    for cls, forecaster in ((RSATransformer, RSAForecaster), (VanillaTransformer, TransformerForecaster)):
        model = cls.from_dataset(train, d_model=16)
        estimator = forecaster(h=4, input_size=16, d_model=16)
        reference = estimator.build_network(estimator.network_config())
        assert type(model.network) is ForecastingTransformer
        assert {k: v.shape for k, v in model.network.state_dict().items()} == \
               {k: v.shape for k, v in reference.state_dict().items()}
        ours = inspect.signature(cls).parameters
        theirs = inspect.signature(forecaster).parameters
        for name in ARCHITECTURE[forecaster]:
            if forecaster is RSAForecaster and name in ("rem", "attention_options"):  # REM's options: flat hparams
                continue
            assert ours[name].default == theirs[name].default, name
        if forecaster is RSAForecaster:  # "auto" reads a tsrsa fit's size; a network built without one starts at 0
            for field, default in tsrsa.REM.field_defaults().items():
                if field not in ("init", "gate_init", "learning_rate"):  # init: "data" needs a tsrsa fit
                    assert ours[{"mask": "rem_mask"}.get(field, field)].default == default, field
            assert ours["gate_init"].default == 0.0 == reference.blocks[0].attn.mu.item()
            assert model.network.blocks[0].attn.mu.item() == 0.0


def test_the_adapters_take_any_kind_by_name(toy):
    from tsrsa.integrations.pytorch_forecasting import VanillaTransformer

    train, _ = toy
    model = VanillaTransformer.from_dataset(train, d_model=16, attention="rsa", attention_options={"gate_init": -2.0})
    assert all(isinstance(b.attn, RSAAttention) for b in model.network.blocks)
    torch.testing.assert_close(model.network.blocks[0].attn.mu, torch.tensor([-2.0]))
    other = tslib.VanillaModel(_configs(), attention="rsa", attention_options={"n_dilated_regular": 1})
    assert [b.attn.plan.kinds for b in other.network.blocks][0] == ("regular", "cyclic_cos", "cyclic_sin", "regular")
    with pytest.raises(TypeError, match="has no option"):
        tslib.VanillaModel(_configs(), attention="rsa", attention_options={"gate_start": 1.0})


def test_ptf_predict_leaves_the_callers_trainer_kwargs_alone(toy):
    from tsrsa.integrations.pytorch_forecasting import VanillaTransformer

    train, last = toy
    model = VanillaTransformer.from_dataset(train, d_model=8, n_heads=2, d_ff=16)
    trainer_kwargs = {"enable_progress_bar": False}
    first = model.predict(last, trainer_kwargs=trainer_kwargs)
    second = model.predict(last, trainer_kwargs=trainer_kwargs)  # pytorch-forecasting alone breaks here
    assert trainer_kwargs == {"enable_progress_bar": False}
    torch.testing.assert_close(first, second)
    with pytest.raises(ValueError, match="callbacks"):
        model.predict(last, trainer_kwargs={"callbacks": []})
    with pytest.raises(TypeError, match="trainer_kwargs must be a dict"):
        model.predict(last, trainer_kwargs=[("logger", False)])


def test_ptf_quantile_loss_gives_ordered_quantiles_and_a_plot(toy, ptf):
    from tsrsa.integrations.pytorch_forecasting import VanillaTransformer

    train, last = toy
    torch.manual_seed(0)
    model = VanillaTransformer.from_dataset(train, d_model=8, n_heads=2, d_ff=16,
                                            loss=ptf.metrics.QuantileLoss([0.1, 0.5, 0.9]))
    assert model.hparams.output_size == 3
    _trainer(limit_train_batches=2).fit(model, train_dataloaders=train.to_dataloader(train=True, batch_size=16),
                                        val_dataloaders=last.to_dataloader(train=False, batch_size=16))
    quantiles = model.predict(last, mode="quantiles")
    assert quantiles.shape == (2, 4, 3)
    assert (quantiles.diff(dim=-1) >= 0).all()
    torch.testing.assert_close(model.predict(last, mode="prediction"), quantiles[..., 1])
    raw = model.predict(last, mode="raw", return_x=True)
    assert raw.output["prediction"].shape == (2, 4, 3)
    pytest.importorskip("matplotlib")
    figure = model.plot_prediction(raw.x, raw.output, idx=0)
    assert figure.axes and figure.axes[0].lines
    import matplotlib.pyplot as plt

    plt.close(figure)


def test_ptf_rejects_datasets_and_losses_it_cannot_serve(toy, ptf):
    from tsrsa.integrations.pytorch_forecasting import RSATransformer

    train, _ = toy
    data = pd.DataFrame({"series": "a", "time_idx": np.arange(60), "y": np.sin(np.arange(60) / 3)})
    common = dict(time_idx="time_idx", target="y", group_ids=["series"], max_prediction_length=4)
    categories = data.assign(kind=np.where(np.arange(60) % 2, "odd", "even"))
    with_categories = ptf.TimeSeriesDataSet(categories, max_encoder_length=16, time_varying_unknown_reals=["y"],
                                            time_varying_known_categoricals=["kind"], **common)
    with pytest.raises(ValueError, match=r"not time-varying ones; the dataset has \['kind'\]"):
        RSATransformer.from_dataset(with_categories)
    varying = ptf.TimeSeriesDataSet(data, max_encoder_length=16, min_encoder_length=8,
                                    time_varying_unknown_reals=["y"], **common)
    with pytest.raises(ValueError, match="min_encoder_length=max_encoder_length"):
        RSATransformer.from_dataset(varying)
    no_history = ptf.TimeSeriesDataSet(data, max_encoder_length=16, **common)
    with pytest.raises(ValueError, match="time_varying_unknown_reals"):
        RSATransformer.from_dataset(no_history)
    with pytest.raises(TypeError, match="context_length comes from the dataset"):
        RSATransformer.from_dataset(train, context_length=32)
    with pytest.raises(TypeError, match="TimeSeriesDataSet"):
        RSATransformer.from_dataset(data)
    with pytest.raises(TypeError, match="not supported"):
        RSATransformer.from_dataset(train, loss=ptf.metrics.NormalDistributionLoss())
    with pytest.raises(ValueError, match="include 0.5"):
        RSATransformer.from_dataset(train, loss=ptf.metrics.QuantileLoss([0.1, 0.9]))


@pytest.mark.filterwarnings("ignore:ReduceLROnPlateau", "ignore:You defined a `validation_step`")
def test_ptf_covariates_map_onto_the_backbone(ptf, tmp_path):
    """Known reals reach the horizon step by step, unknown reals the look-back, statics their embeddings."""
    import lightning.pytorch as pl

    from tsrsa.integrations.pytorch_forecasting import VanillaTransformer, covariate_layout

    rng = np.random.default_rng(0)
    t = np.arange(120)
    frame = pd.concat([pd.DataFrame({"series": sid, "region": region, "time_idx": t, "size": float(k + 1),
                                     "promo": (rng.random(120) < 0.3).astype(float),
                                     "temp": np.sin(t / 5.0)}) for k, (sid, region) in
                       enumerate([("a", "north"), ("b", "south")])], ignore_index=True)
    frame["y"] = 3.0 * frame["promo"] + frame["size"] + 0.05 * rng.standard_normal(len(frame))
    train = ptf.TimeSeriesDataSet(frame[frame.time_idx < 110], time_idx="time_idx", target="y",
                                  group_ids=["series"], max_encoder_length=16, max_prediction_length=4,
                                  time_varying_unknown_reals=["y", "temp"], time_varying_known_reals=["promo"],
                                  static_reals=["size"], static_categoricals=["region"], add_relative_time_idx=True)
    layout = covariate_layout(train)
    reals = list(train.reals)
    assert [reals[i] for i in layout["known"]] == ["promo", "relative_time_idx"]
    assert [reals[i] for i in layout["past"]] == ["temp"] and [reals[i] for i in layout["static_reals"]] == ["size"]
    assert layout["cardinalities"] == [3]
    torch.manual_seed(0)
    model = VanillaTransformer.from_dataset(train, d_model=16, n_heads=2, d_ff=16, patch_len=4, learning_rate=1e-2)
    shape = model.network.config.covariates
    assert shape == {"n_past": 3, "n_future": 2, "n_static": 1, "cardinalities": [3]}
    pl.Trainer(max_epochs=6, accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
               enable_model_summary=False, enable_checkpointing=False).fit(
        model, train_dataloaders=train.to_dataloader(train=True, batch_size=32))
    x, _ = next(iter(train.to_dataloader(train=False, batch_size=64)))
    model.eval()
    with torch.no_grad():
        on = model({**x, "decoder_cont": _with_promo(x, train, 1.0)})["prediction"]
        off = model({**x, "decoder_cont": _with_promo(x, train, 0.0)})["prediction"]
    assert float((on - off).mean()) > 1.0  # the known-future offer moves the forecast (true effect 3)


def _with_promo(x, dataset, value: float):
    """The decoder's reals with the (normalised) offer set to ``value`` in the data's units."""
    decoder = x["decoder_cont"].clone()
    index = list(dataset.reals).index("promo")
    scaler = dataset.get_parameters()["scalers"]["promo"]  # the fitted one
    decoder[..., index] = float((value - scaler.mean_[0]) / scaler.scale_[0])
    return decoder
