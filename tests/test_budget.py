"""The training budget in optimiser steps (``max_epochs``/``batches_per_epoch``/patience "auto") and the
progress line of a fit."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tsrsa.data.windows import training_windows
from tsrsa.training import WindowLoader

CPU = torch.device("cpu")

# ---------------------------------------------------------------------- the budget that scales with the data
def test_auto_epochs_count_optimiser_steps_between_ten_and_a_hundred():
    from tsrsa.training.budget import auto_epochs, auto_patience

    # ETTh1 at input 96, h 96, batch 32: 8,354 windows, 262 steps an epoch -> 8 -> the floor of 10
    assert auto_epochs(8354, 32) == 10
    assert auto_epochs(100, 32) == 100  # 4 steps an epoch -> 500 -> capped
    assert auto_epochs(32 * 40, 32) == 50  # 40 steps an epoch -> exactly 2,000 steps
    assert auto_epochs(32 * 40 + 1, 32) == 49  # 41 steps -> ceil(2000 / 41)
    assert auto_epochs(1, 32) == 100
    assert [auto_patience(e) for e in (10, 14, 15, 49, 100)] == [3, 3, 3, 9, 20]


def test_resolve_budget_keeps_numbers_and_turns_stopping_off_without_validation():
    from tsrsa.training.budget import Budget, resolve_budget

    assert resolve_budget("auto", "auto", 100, 32, True) == Budget(100, None, 20)
    assert resolve_budget("auto", "auto", 100, 32, False) == Budget(100, None, None)
    assert resolve_budget(7, "auto", 100, 32, True) == Budget(7, None, 3)
    assert resolve_budget("auto", 5, 8354, 32, True) == Budget(10, None, 5)
    assert resolve_budget("auto", None, 8354, 32, True) == Budget(10, None, None)


def test_the_auto_budget_bounds_the_steps_of_a_large_panel_and_keeps_passes_on_small_data():
    from tsrsa.training.budget import EPOCH_STEPS, MIN_EPOCHS, TARGET_STEPS, Budget, resolve_budget

    # M4 Hourly at batch 32: about 7,000 steps a pass; ten passes would be 70,000 steps
    big = resolve_budget("auto", "auto", 7000 * 32, 32, True)
    assert big == Budget(max(MIN_EPOCHS, -(-TARGET_STEPS // EPOCH_STEPS)), EPOCH_STEPS, 3)
    assert TARGET_STEPS <= big.steps(7000 * 32, 32) <= max(TARGET_STEPS, MIN_EPOCHS * EPOCH_STEPS)
    # ten times more windows: the same steps
    assert resolve_budget("auto", "auto", 70000 * 32, 32, True).steps(70000 * 32, 32) == big.steps(7000 * 32, 32)
    # a pass no longer than the cap is read whole, and the epochs make up the steps
    small = resolve_budget("auto", "auto", EPOCH_STEPS * 32, 32, True)
    assert small.batches_per_epoch is None and small.steps(EPOCH_STEPS * 32, 32) >= TARGET_STEPS
    # epochs given as a number count whole passes; an explicit cap or None is kept
    assert resolve_budget(10, 3, 7000 * 32, 32, True) == Budget(10, None, 3)
    assert resolve_budget("auto", "auto", 7000 * 32, 32, True, None).batches_per_epoch is None
    assert resolve_budget(10, 3, 7000 * 32, 32, True, 50) == Budget(10, 50, 3)


@pytest.mark.parametrize("value, error", [("Auto", TypeError), (0, ValueError), (2.5, TypeError), (True, TypeError)])
def test_budget_arguments_are_checked(value, error):
    import tsrsa
    from tests.conftest import make_panel

    with pytest.raises(error, match="max_epochs"):
        tsrsa.DLinearForecaster(h=2, input_size=4, max_epochs=value).fit(make_panel(n_series=1, length=20))
    with pytest.raises(error, match="early_stopping_patience"):
        tsrsa.DLinearForecaster(h=2, input_size=4, trainer={"early_stopping_patience": value}).fit(
            make_panel(n_series=1, length=20))


def test_a_fit_at_the_defaults_resolves_and_reports_its_budget():
    import tsrsa
    from tests.conftest import make_panel

    df = make_panel(n_series=2, length=40)  # 2 x (40 - 8 - 6 - 2 + 1) = 50 windows: 2 steps an epoch
    model = tsrsa.DLinearForecaster(h=2, input_size=6, val_size=8, random_state=0).fit(df)
    assert (model.max_epochs_, model.early_stopping_patience_) == (100, 20)
    assert model.ensemble_size_ == 1 and model.plan_.epochs == 100  # one network, its budget in the plan
    ran = len(model.fit_history_)
    assert ran <= 100
    if ran < 100:  # stopped early: the last 20 epochs did not improve on the best
        best = int(np.argmin(model.fit_history_["val_loss"].to_numpy()))
        assert ran - 1 - best == 20
    no_val = tsrsa.DLinearForecaster(h=2, input_size=6, max_epochs=3, random_state=0).fit(df)
    assert (no_val.max_epochs_, no_val.early_stopping_patience_) == (3, None)
    assert len(no_val.fit_history_) == 3


# ---------------------------------------------------------------------- fewer batches per epoch
def test_a_limited_pass_takes_its_batches_from_a_fresh_shuffle_each_time():
    values = np.arange(100, dtype=np.float32)
    windows = training_windows(values, np.array([0, 100]), np.array([100]), 4, 2)  # 95 windows
    data = WindowLoader(windows, 8, shuffle=True, device=CPU, max_batches=3)
    assert (len(data), data.n_windows) == (3, 24)
    rng = np.random.default_rng(0)
    passes = [np.concatenate([x[:, 0].numpy() for x, _ in data.iterate(rng)]) for _ in range(2)]
    for seen in passes:
        assert len(seen) == 24 and len(set(seen.tolist())) == 24  # no window twice in a pass
        assert set(seen.tolist()) <= set(range(95))
    assert set(passes[0].tolist()) != set(passes[1].tolist())  # another subset the next pass
    whole = WindowLoader(windows, 8, shuffle=True, device=CPU, max_batches=50)  # more than there are
    assert (len(whole), whole.n_windows) == (12, 95)


def test_batches_per_epoch_bounds_the_steps_and_the_auto_budget_counts_them(monkeypatch):
    import tsrsa
    from tests.conftest import make_panel
    from tsrsa.training.budget import auto_epochs

    df = make_panel(n_series=4, length=120)  # 4 x (120 - 8 - 4 + 1) = 436 windows: 55 batches of 8
    steps = []
    step = torch.optim.AdamW.step
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, *a, **k: (steps.append(1), step(self, *a, **k))[1])
    model = tsrsa.DLinearForecaster(h=4, input_size=8, batch_size=8, trainer=tsrsa.Trainer(batches_per_epoch=2),
                                    max_epochs=3, random_state=0).fit(df)
    assert len(steps) == 3 * 2  # three epochs of two batches, not of every window
    assert len(model.fit_history_) == 3 and model.get_params()["trainer"].batches_per_epoch == 2
    steps.clear()
    auto = tsrsa.DLinearForecaster(h=4, input_size=8, batch_size=8, trainer=tsrsa.Trainer(batches_per_epoch=1),
                                   random_state=0).fit(df)
    assert auto_epochs(436, 8) == 37  # every window: 55 steps an epoch
    assert auto.max_epochs_ == 100  # one step an epoch: 2,000 wanted, capped at 100
    assert len(steps) == 100 and auto.plan_.steps == 100  # the plan's budget, run


def test_a_default_fit_on_a_panel_longer_than_the_cap_draws_capped_epochs(monkeypatch):
    import tsrsa
    from tests.conftest import make_panel
    from tsrsa.training import budget

    monkeypatch.setattr(budget, "EPOCH_STEPS", 3)  # the rule at a scale a test affords
    df = make_panel(n_series=4, length=120)  # 436 windows: 55 batches of 8 a pass
    steps = []
    step = torch.optim.AdamW.step
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, *a, **k: (steps.append(1), step(self, *a, **k))[1])
    model = tsrsa.DLinearForecaster(h=4, input_size=8, batch_size=8, random_state=0).fit(df)
    assert (model.max_epochs_, model.batches_per_epoch_) == (100, 3)  # 2,000 steps wanted: 100 epochs of 3
    assert len(steps) == 300 and model.plan_.steps == 300  # the plan's budget, run
    steps.clear()
    passes = tsrsa.DLinearForecaster(h=4, input_size=8, batch_size=8, max_epochs=2, random_state=0).fit(df)
    assert passes.batches_per_epoch_ is None and len(steps) == 2 * 55  # epochs as a number: whole passes


@pytest.mark.parametrize("value, error", [(0, ValueError), (2.5, TypeError), ("all", TypeError)])
def test_batches_per_epoch_is_checked(value, error):
    import tsrsa
    from tests.conftest import make_panel

    model = tsrsa.DLinearForecaster(h=2, input_size=4, trainer={"batches_per_epoch": value})
    with pytest.raises(error, match="batches_per_epoch"):
        model.fit(make_panel(n_series=1, length=20))
    assert not hasattr(model, "network_")  # the rejected call fitted nothing


def test_training_that_carries_the_state_refuses_a_partial_epoch():
    import tsrsa

    with pytest.raises(ValueError, match="batches_per_epoch='auto'"):
        tsrsa.TransformerForecaster(h=2, input_size=8, attention="block_recurrent", stream=True,
                                    trainer={"batches_per_epoch": 4}).check_params()


# ---------------------------------------------------------------------- the progress line
def test_verbose_one_shows_steps_epochs_windows_and_losses_and_zero_shows_nothing(capsys):
    import tsrsa
    from tests.conftest import make_panel

    df = make_panel(n_series=2, length=60)
    tsrsa.DLinearForecaster(h=4, input_size=8, batch_size=8, max_epochs=2, val_size=4, random_state=0,
                            trainer={"verbose": 1}).fit(df)
    err = capsys.readouterr().err
    windows = 2 * (60 - 4 - 8 - 4 + 1)
    steps = 2 * -(-windows // 8)
    assert f"{windows:,} windows/epoch" in err and "2 validation" in err
    assert f"{steps}/{steps}" in err and "step" in err  # every optimiser step of the budget counted
    assert "epoch 2/2" in err and "val " in err and "best epoch" in err
    tsrsa.DLinearForecaster(h=4, input_size=8, batch_size=8, max_epochs=2, val_size=4, random_state=0).fit(df)
    assert capsys.readouterr() == ("", "")
