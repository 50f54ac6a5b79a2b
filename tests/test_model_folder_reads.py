"""What ``tsrsa.load`` reads of a model folder: regular files inside it, each within a bound.

A link out of the folder (to /dev/null, to a file elsewhere) is refused before it is read, so is a file
whose size is not the one config.json recorded at saving or a config.json larger than its cap; a link
inside the folder and a folder that is itself a link still load, and so do folders saved before sizes
were recorded (``test_persistence``'s fixtures of every format). Anything but a path is a TypeError of
tsrsa's own.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import tsrsa
from tsrsa import SeasonalNaiveForecaster
from tsrsa.estimator.model_folder import CONFIG_LIMIT
from tsrsa.estimator.persistence import CONFIG_CHECKSUM, config_checksum

from conftest import make_panel

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = SeasonalNaiveForecaster(h=3, season_length=6).fit(make_panel(n_series=2, length=30))
    path = tmp_path_factory.mktemp("saved") / "model"
    model.save(path)
    return model, path


def _copy(path: Path, to: Path) -> Path:
    shutil.copytree(path, to)
    return to


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("path", [None, 3, 2.5, ["model"], b"model", object()])
def test_anything_but_a_path_is_a_type_error_of_tsrsa(path):
    with pytest.raises(TypeError, match=r"tsrsa.load takes the path of a model folder, a str or a pathlib.Path"):
        tsrsa.load(path)


def test_save_records_the_size_of_every_file(saved):
    _, path = saved
    config = json.loads((path / "config.json").read_text())
    assert config["sizes"] == {name: (path / name).stat().st_size for name in config["files"]}


@pytest.mark.parametrize("target", ["config.json", "state.json", "arrays.npz"])
def test_a_link_out_of_the_folder_is_refused_before_it_is_read(saved, tmp_path, target):
    model, source = saved
    path = _copy(source, tmp_path / "m")
    outside = tmp_path / f"elsewhere-{target}"
    (path / target).rename(outside)  # the very file, moved out: only the link is wrong
    (path / target).symlink_to(outside)
    with pytest.raises(ValueError, match=rf"m/{target} is a link to .*elsewhere-{target}, outside the folder: a "
                                         rf"saved model is read from the files of its folder only"):
        tsrsa.load(path)
    (path / target).unlink()
    (path / target).symlink_to("/dev/null")  # a device: before, config.json was read as empty JSON
    with pytest.raises(ValueError, match=rf"{target} is a link to /dev/null, outside the folder"):
        tsrsa.load(path)
    (path / target).unlink()
    shutil.copy(outside, path / f"copy-{target}")
    (path / target).symlink_to(f"copy-{target}")  # a link that stays inside the folder is read
    pd.testing.assert_frame_equal(tsrsa.load(path).predict(), model.predict())
    (tmp_path / "linked").symlink_to(source, target_is_directory=True)  # and so is a folder that is a link
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "linked").predict(), model.predict())


def test_a_file_of_another_size_than_recorded_is_refused_even_with_a_forged_checksum(saved, tmp_path):
    model, source = saved
    path = _copy(source, tmp_path / "m")
    grown = (path / "state.json").read_bytes() + b" " * 4096  # the same JSON, four KiB longer
    (path / "state.json").write_bytes(grown)
    config = json.loads((path / "config.json").read_text())
    config["files"]["state.json"] = hashlib.sha256(grown).hexdigest()  # the checksum forged, the size not
    config[CONFIG_CHECKSUM] = config_checksum(config)
    (path / "config.json").write_text(json.dumps(config))
    before = _snapshot(path)
    with pytest.raises(ValueError, match=r"state.json does not match the checksum recorded at saving \(it holds "
                                         rf"{len(grown)} bytes where {len(grown) - 4096} were saved\)"):
        tsrsa.load(path)
    assert _snapshot(path) == before


def test_a_config_above_its_cap_is_refused_unparsed(saved, tmp_path):
    model, source = saved
    path = _copy(source, tmp_path / "m")
    text = (path / "config.json").read_text()
    (path / "config.json").write_text(text + " " * CONFIG_LIMIT)  # the same JSON, padded past the cap
    with pytest.raises(ValueError, match=rf"config.json holds {len(text) + CONFIG_LIMIT} bytes, more than the "
                                         rf"{CONFIG_LIMIT} a config.json of a saved model may hold"):
        tsrsa.load(path)


def test_malformed_sizes_are_refused(saved, tmp_path):
    _, source = saved
    path = _copy(source, tmp_path / "m")
    config = json.loads((path / "config.json").read_text())
    config["sizes"]["arrays.npz"] = -1
    config[CONFIG_CHECKSUM] = config_checksum(config)
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"config.json is corrupted: its file sizes are not byte counts"):
        tsrsa.load(path)
