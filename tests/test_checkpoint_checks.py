"""A checkpoint file is checked as a saved model is, before anything is restored from it: its
checksum, its entries, shapes, dtypes and finite values, and a history within the fit's budget.
Every fault is a ValueError naming the file and saying how to start afresh, and the refused fit
changes nothing (the estimator, the file, the user's frame, the random states). The folder is
checked to be writable before the first epoch."""
from __future__ import annotations

import copy
import io
import os
import re

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import Trainer
from tsrsa.training.checkpoint import FILE, Checkpoint

from conftest import make_panel

OPTIONS = dict(h=4, input_size=16, max_epochs=2, batch_size=16, val_size=4, random_state=0)
AFRESH = "Remove the file to start the fit afresh"


class Stop(KeyboardInterrupt):
    """An interrupt after the first epoch (a killed job)."""


def stop_after_first(record: dict) -> None:
    if record["epoch"] == 1:
        raise Stop()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A fitted model, its data, and the state a fit of it interrupted after epoch 1 saved."""
    df = make_panel(n_series=3, length=80)
    folder = tmp_path_factory.mktemp("saved")
    with pytest.raises(Stop):
        tsrsa.DLinearForecaster(**OPTIONS, trainer=Trainer(checkpoint_dir=folder, callbacks=[stop_after_first])).fit(df)
    state = torch.load(saved_payload(folder / FILE), weights_only=True)
    return tsrsa.DLinearForecaster(**OPTIONS).fit(df), df, state


def saved_payload(path):
    """The torch file inside a checkpoint file (after its first line, when it has one)."""
    data = path.read_bytes()
    return io.BytesIO(data.split(b"\n", 1)[1] if data.startswith(b"tsrsa") else data)


def write(folder, state: dict, *, plain: bool = False) -> bytes:
    """Write ``state`` as this tsrsa writes a checkpoint (``plain``: as a bare torch file, the way an
    earlier tsrsa did); returns the file's bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    if plain:
        torch.save(state, folder / FILE)
    else:
        rest = {k: v for k, v in state.items() if k != "fingerprint"}
        Checkpoint(folder, state["fingerprint"]).save(rest)
    return (folder / FILE).read_bytes()


def refused(saved, folder, match: str):
    """Fit a copy of the fitted model with the trainer's ``checkpoint_dir=folder``: it must refuse with ``match``
    and leave the model, the file, the frame and the random states as they were."""
    fitted, df, _ = saved
    model = copy.deepcopy(fitted)
    model.set_params(trainer=Trainer(checkpoint_dir=str(folder)))
    frame, before = df.copy(), fitted.predict()
    file = (folder / FILE).read_bytes() if (folder / FILE).exists() else None
    rng_torch, rng_numpy = torch.get_rng_state(), np.random.get_state()
    with pytest.raises(ValueError, match=match) as caught:
        model.fit(frame)
    pd.testing.assert_frame_equal(model.predict(), before)
    assert model.fit_history_.equals(fitted.fit_history_)
    pd.testing.assert_frame_equal(frame, df)
    assert file is None or (folder / FILE).read_bytes() == file
    assert torch.equal(torch.get_rng_state(), rng_torch)
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), rng_numpy))
    return str(caught.value)


def test_a_history_beyond_the_fits_budget_is_refused(saved, tmp_path):
    state = copy.deepcopy(saved[2])
    state["history"] = [dict(state["history"][0], epoch=k) for k in range(1, 51)]
    for plain in (False, True):
        write(tmp_path / str(plain), state, plain=plain)
        text = refused(saved, tmp_path / str(plain), r"claims 50 finished epochs, but this fit trains for max_epochs=2")
        assert str(tmp_path / str(plain) / FILE) in text and AFRESH in text


@pytest.mark.parametrize("fault, match", [
    (lambda s: s.pop("optimizer"), r"has no \['optimizer'\] entry"),
    (lambda s: s["network"].update({next(iter(s["network"])): torch.zeros(3, 3)}), r"shape \(3, 3\)"),
    (lambda s: next(iter(s["network"].values())).view(-1).__setitem__(0, float("nan")), "NaN or infinite"),
    (lambda s: s["best_state"].update({k: v.double() for k, v in s["best_state"].items()}), "dtype torch.float64"),
    (lambda s: s.update(best_epoch=7), "best epoch 7 is not one of its 1 epochs"),
    (lambda s: s.update(best_loss=1e6), "best loss 1000000.0 is not the loss of its best epoch"),
    (lambda s: s["history"][0].update(train_loss=float("inf")), "not a finite number"),
    (lambda s: s["optimizer"]["state"][0].update(exp_avg=torch.zeros(5, 5, 5)), "exp_avg of parameter 0 has shape"),
    (lambda s: s["random"].update(torch=torch.zeros(7, dtype=torch.uint8)), "torch random state is not one"),
    (lambda s: s["random"].update(numpy='{"bit_generator": "os.system"}'), "names the bit generator"),
    (lambda s: s.update(patience_left=99), "patience left is 99"),
    (lambda s: s.update(history="1 epoch"), "history is not a list"),
])
def test_each_fault_in_a_checkpoint_is_a_value_error_naming_the_file(saved, tmp_path, fault, match):
    state = copy.deepcopy(saved[2])
    fault(state)
    for plain in (False, True):
        write(tmp_path / str(plain), state, plain=plain)
        text = refused(saved, tmp_path / str(plain), match)
        assert text.startswith(f"{tmp_path / str(plain) / FILE} is not a usable training checkpoint") and AFRESH in text


def test_a_checkpoint_damaged_on_disk_is_refused_by_its_checksum(saved, tmp_path):
    folder = tmp_path / "ckpt"
    data = bytearray(write(folder, copy.deepcopy(saved[2])))
    weights = max(saved[2]["network"].values(), key=torch.numel).numpy().tobytes()
    at = bytes(data).find(weights)
    assert at > 0  # the largest weight's bytes, stored as they are
    data[at + len(weights) // 2] ^= 0x01  # one bit of one weight: torch itself reads it without a word
    (folder / FILE).write_bytes(bytes(data))
    text = refused(saved, folder, r"does not match the checksum on its first line")
    assert str(folder / FILE) in text and AFRESH in text


def test_an_unwritable_folder_is_refused_before_the_first_epoch(saved, tmp_path):
    fitted, df, _ = saved
    (tmp_path / "file").write_text("x")
    seen = []
    model = copy.deepcopy(fitted)
    model.set_params(trainer={"checkpoint_dir": str(tmp_path / "file" / "ckpt"), "callbacks": [seen.append]})
    with pytest.raises(ValueError, match=r"checkpoint_dir '.*ckpt' cannot be written .*give a folder this process "
                                         r"can write"):
        model.fit(df)
    assert seen == []  # no epoch ran
    pd.testing.assert_frame_equal(model.predict(), fitted.predict())


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="a read-only folder binds no root user")
def test_a_read_only_folder_is_refused_before_the_first_epoch(saved, tmp_path):
    fitted, df, _ = saved
    folder = tmp_path / "ckpt"
    folder.mkdir()
    folder.chmod(0o555)
    seen = []
    try:
        model = tsrsa.DLinearForecaster(**OPTIONS, trainer=Trainer(checkpoint_dir=folder, callbacks=[seen.append]))
        with pytest.raises(ValueError, match="cannot be written"):
            model.fit(df)
    finally:
        folder.chmod(0o755)
    assert seen == [] and not hasattr(model, "network_")


def test_a_checkpoint_is_checked_against_the_network_and_optimiser_that_resume(saved, tmp_path):
    """What ``Checkpoint.load`` checks given the run's network and optimiser: a file whose weights
    all have another (self-consistent) shape, which the file alone cannot tell."""
    state = copy.deepcopy(saved[2])
    name, weight = next((k, v) for k, v in state["network"].items() if v.dim() == 2)
    wider = torch.zeros(weight.shape[0], weight.shape[1] + 1)
    number = list(state["network"]).index(name)
    state["network"][name] = state["best_state"][name] = wider
    state["optimizer"]["state"][number].update(exp_avg=wider.clone(), exp_avg_sq=wider.clone())
    write(tmp_path, state)
    network = copy.deepcopy(saved[0].network_)
    optimizer = torch.optim.AdamW(network.parameters())
    checkpoint = Checkpoint(tmp_path, state["fingerprint"])
    assert checkpoint.load()["network"][name].shape == wider.shape  # alone, the file is consistent
    with pytest.raises(ValueError, match=re.escape(f"its network holds '{name}' of shape {tuple(wider.shape)} and "
                                                   f"dtype torch.float32, where this fit's network has "
                                                   f"{tuple(weight.shape)}")):
        checkpoint.load(network=network, optimizer=optimizer)
    assert torch.equal(network.state_dict()[name], saved[0].network_.state_dict()[name])
    state = copy.deepcopy(saved[2])
    group = state["optimizer"]["param_groups"][0]
    group["params"] = group["params"][:-1]  # one parameter fewer than the network has
    state["optimizer"]["state"].pop(len(group["params"]), None)
    write(tmp_path, state)
    assert checkpoint.load() is not None
    with pytest.raises(ValueError, match=r"its optimizer has groups of \[5\] parameters, where this fit's has \[6\]"):
        checkpoint.load(network=network, optimizer=optimizer)
