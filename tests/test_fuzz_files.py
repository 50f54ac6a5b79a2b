"""Fuzzing the files a fit reads besides frames: folders of Parquet shards and training checkpoints.

Four surfaces, one test each:

- ``shard bytes``: a folder that write_shards wrote (with its manifest, or without it, as an earlier
  tsrsa wrote), altered byte-wise (bits flipped, bytes set or zeroed, files cut short, lengthened,
  deleted, swapped or copied, another's Parquet file added, the manifest removed), then fitted from;
- ``shard columns``: folders of Parquet files whose columns and dtypes are drawn and mixed file by
  file (the id, time and target missing or of other dtypes, extra columns), written directly or
  through write_shards, then fitted from;
- ``checkpoint bytes``: a checkpoint file altered byte-wise (with its checksum line, or a bare
  torch file as an earlier tsrsa wrote), then resumed from;
- ``checkpoint contents``: entries anywhere in a checkpoint's state deleted or replaced by values of
  other types, shapes and dtypes (NaN, inf, text, tensors, lists), saved with a valid checksum, then
  resumed from.

For every call: the outcome is a fit or a ValueError/TypeError raised by tsrsa's own code (never one
from pyarrow, torch or pandas deep inside); no file is changed by a call that reads it, nor by a
write_shards that refuses; a refused fit leaves the fitted model's forecast bit-identical. A folder
with its manifest is refused whenever a file it lists changed, and a checkpoint with its checksum
line whenever its bytes changed.

Profiles (``tests/conftest.py``, selected by the ``TSRSA_FUZZ`` environment variable): ``make test``
runs the "ci" profile with a fixed seed (``@seed(0)``) and 15 examples a surface, in a few seconds;
``TSRSA_FUZZ=long`` runs the "long" profile, seed 0 and its 2,000 examples a surface (8,000 calls,
about a quarter of an hour on two cores)::

    TSRSA_FUZZ=long .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_fuzz_files.py
"""
from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import os
import re
import tempfile
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st

import tsrsa
from tsrsa.data import ParquetShards, write_shards
from tsrsa.training.checkpoint import FILE

from conftest import make_panel

PACKAGE = Path(__file__).resolve().parents[1] / "tsrsa"
MANIFEST = "_tsrsa_shards.json"  # what write_shards writes beside its files
HEADER = b"tsrsa training checkpoint 1 sha256="  # a checkpoint's first line, before the checksum of the rest
#: examples a surface: the long profile's 2,000, or a dozen and a half in the ci profile
EXAMPLES = settings.default.max_examples if os.environ.get("TSRSA_FUZZ") == "long" else 15
FUZZ = settings(deadline=None, max_examples=EXAMPLES,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DLINEAR = dict(h=4, input_size=8, max_epochs=2, batch_size=16, val_size=4, random_state=0)


class Source(tuple):
    """A fixture's values, shown short in hypothesis' reports."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)}>"


def from_tsrsa(error: BaseException) -> bool:
    """Whether ``error`` was raised by a line of tsrsa's own code (not from a library it calls)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)


def folder_bytes(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def lay_out(folder: Path, files: dict) -> None:
    """Write ``files`` ({relative name: bytes}) into the empty ``folder``."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def refit(model, data):
    """Fit a copy of fitted ``model`` on ``data`` (a callable giving the frame or the shards, so that
    opening is part of the call): the copy, or None when refused, by the rules of the module docstring."""
    copied, before = copy.deepcopy(model), model.predict()
    try:
        copied.fit(data())
    except (ValueError, TypeError) as error:
        assert from_tsrsa(error), "".join(traceback.format_exception(error))
        pd.testing.assert_frame_equal(copied.predict(), before)
        event(f"refused: {re.sub(r'[^ ]*/[^ ]*', '<path>', str(error))[:60]}")
        return None
    assert np.isfinite(copied.predict()["yhat"].to_numpy()).all()
    event("fitted")
    return copied


def damaged(draw, files: dict, names: list[str]) -> dict:
    """``files`` ({name: bytes}) after one to three byte-wise alterations of those in ``names``."""
    files = dict(files)
    for _ in range(draw(st.integers(1, 3))):
        present = [n for n in names if n in files]
        if not present:
            break
        name = draw(st.sampled_from(present))
        data = bytearray(files[name])
        kind = draw(st.sampled_from(["flip", "set", "zero", "cut", "grow", "delete", "swap"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "zero":
            n = draw(st.integers(1, 64))
            data[at: at + n] = bytes(len(data[at: at + n]))
        elif kind == "cut":
            del data[at:]
        elif kind == "grow":
            data[at:at] = draw(st.binary(min_size=1, max_size=32))
        elif kind == "delete":
            del files[name]
            continue
        elif kind == "swap":
            data = bytearray(files[draw(st.sampled_from(present))])
        files[name] = bytes(data)
    return files


# ------------------------------------------------------------------ Parquet shards
@pytest.fixture(scope="module")
def shard_source(tmp_path_factory):
    """The frame, a folder write_shards wrote from it (its files' bytes), another's Parquet file,
    the model fitted on the frame, and a folder for the examples."""
    root = tmp_path_factory.mktemp("shards")
    df = make_panel(n_series=4, length=30)
    write_shards(df, root / "source", n_files=3)
    pd.DataFrame({"sensor": ["a"] * 8, "reading": np.arange(8.0)}).to_parquet(root / "other.parquet", index=False)
    model = tsrsa.SeasonalNaiveForecaster(h=3, season_length=6).fit(df)
    return Source((df, folder_bytes(root / "source"), (root / "other.parquet").read_bytes(), model, root))


@seed(0)
@FUZZ
@given(data=st.data())
def test_shard_bytes_fit_or_refuse_and_change_no_file(shard_source, data):
    df, source, other, model, root = shard_source
    files = dict(source)
    if data.draw(st.booleans(), label="without the manifest (an earlier tsrsa's folder)"):
        files.pop(MANIFEST, None)
    files = damaged(data.draw, files, sorted(files))
    if data.draw(st.booleans(), label="another's file added"):
        files[data.draw(st.sampled_from(["zz.parquet", "sub/zz.parquet"]))] = data.draw(
            st.sampled_from([other, source["part-00000.parquet"]]))
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        folder = Path(tmp)
        lay_out(folder, files)
        fitted = refit(model, lambda: ParquetShards.open(folder))
        assert folder_bytes(folder) == files
    listed = [name for name in source if name != MANIFEST]
    if MANIFEST in files and same_json(files[MANIFEST], source[MANIFEST]):
        if any(files.get(name) != source[name] for name in listed):
            assert fitted is None, "a folder whose listed file changed was read"
        elif fitted is not None:  # only the listed files were read
            pd.testing.assert_frame_equal(fitted.predict(), model.predict())


def same_json(data: bytes, original: bytes) -> bool:
    try:
        return json.loads(data) == json.loads(original)
    except ValueError:
        return False


ID_KINDS = ("str", "int", "category", "missing")
TIME_KINDS = ("datetime", "int", "str", "float", "datetime_us", "missing")
TARGET_KINDS = ("float", "int", "float32", "str", "bool", "nan", "category", "missing", "none")


def drawn_file(draw, ids: list[str], length: int = 24) -> pd.DataFrame:
    """A long frame of series ``ids`` whose id, time and target columns are of drawn kinds."""
    frame = make_panel(length=length, ids=ids)
    kind = draw(st.sampled_from(ID_KINDS), label="id")
    if kind == "int":
        frame["unique_id"] = frame["unique_id"].str[1:].astype(np.int64)
    elif kind == "category":
        frame["unique_id"] = frame["unique_id"].astype("category")
    kind = draw(st.sampled_from(TIME_KINDS), label="time")
    steps = np.tile(np.arange(length), len(ids))
    frame["ds"] = {"datetime": frame["ds"], "int": steps, "str": frame["ds"].astype(str), "float": steps * 1.0,
                   "datetime_us": frame["ds"].astype("datetime64[us]"), "missing": frame["ds"]}[kind]
    if kind == "missing":
        frame = frame.drop(columns="ds")
    kind = draw(st.sampled_from(TARGET_KINDS), label="target")
    y = frame["y"]
    frame["y"] = {"float": y, "int": (y * 10).astype(np.int64), "float32": y.astype(np.float32), "str": y.astype(str),
                  "bool": y > y.median(), "nan": y.where(np.arange(len(y)) % 7 > 0), "category": y.round().astype(
                      "category"), "missing": y, "none": pd.Series([None] * len(y), dtype=object)}[kind]
    if kind == "missing":
        frame = frame.drop(columns="y")
    if draw(st.booleans(), label="an extra column"):
        frame["extra"] = draw(st.sampled_from([1.5, "a", 3]))
    return frame


@seed(0)
@FUZZ
@given(data=st.data())
def test_shard_columns_and_dtypes_fit_or_refuse(shard_source, data):
    df, _, _, model, root = shard_source
    n_files = data.draw(st.integers(1, 3), label="files")
    frames = [drawn_file(data.draw, [f"s{k}"]) for k in range(n_files)]
    through = data.draw(st.booleans(), label="through write_shards")
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        folder = Path(tmp) / "panel"
        if through:
            whole = pd.concat(frames, ignore_index=True)
            kept = whole.copy()
            try:
                write_shards(whole, folder, n_files=n_files)
            except (ValueError, TypeError) as error:
                assert from_tsrsa(error), "".join(traceback.format_exception(error))
                assert not folder.exists()
                pd.testing.assert_frame_equal(whole, kept)
                return
        else:
            folder.mkdir()
            for k, frame in enumerate(frames):
                frame.to_parquet(folder / f"f{k}.parquet", index=False)
        files = folder_bytes(folder)
        fitted = refit(model, lambda: ParquetShards.open(folder))
        assert folder_bytes(folder) == files
        if fitted is not None:  # then the files agree: the declared columns, one schema
            schemas = [pq.read_schema(p) for p in sorted(folder.glob("*.parquet"))]
            assert all(s.remove_metadata().equals(schemas[0].remove_metadata()) for s in schemas)
            assert {"unique_id", "ds", "y"} <= set(schemas[0].names)


# ------------------------------------------------------------------ checkpoints
class Stop(KeyboardInterrupt):
    """An interrupt after the first epoch (a killed job)."""


def stop_after_first(record: dict) -> None:
    if record["epoch"] == 1:
        raise Stop()


@pytest.fixture(scope="module")
def checkpoint_source(tmp_path_factory):
    """The frame, a model fitted on it, the checkpoint file of a fit of it cut after epoch 1 (its bytes)
    and the state in it, and a folder for the examples."""
    root = tmp_path_factory.mktemp("checkpoints")
    df = make_panel(n_series=2, length=48)
    with pytest.raises(Stop):
        tsrsa.DLinearForecaster(**DLINEAR, trainer={"checkpoint_dir": root / "source",
                                                     "callbacks": [stop_after_first]}).fit(df)
    data = (root / "source" / FILE).read_bytes()
    state = torch.load(io.BytesIO(bare(data)), weights_only=True)
    return Source((df, tsrsa.DLinearForecaster(**DLINEAR).fit(df), data, state, root))


def bare(data: bytes) -> bytes:
    """The torch file inside checkpoint file ``data``: after its first line, when it has one."""
    return data.split(b"\n", 1)[1] if data.startswith(HEADER) else data


def resumed(source, data: bytes):
    """Fit a copy of the fitted model with a checkpoint folder holding ``data``: the refit (or None)."""
    df, model, _, _, root = source
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        (Path(tmp) / FILE).write_bytes(data)
        copied = copy.deepcopy(model)
        copied.set_params(trainer={"checkpoint_dir": tmp})
        frame = df.copy()
        fitted = refit(copied, lambda: frame)
        pd.testing.assert_frame_equal(frame, df)
        if fitted is None:
            assert (Path(tmp) / FILE).read_bytes() == data
        return fitted


@seed(0)
@FUZZ
@given(data=st.data())
def test_checkpoint_bytes_resume_or_refuse(checkpoint_source, data):
    original = checkpoint_source[2]
    checked = data.draw(st.booleans(), label="with its checksum line")
    file = original if checked else bare(original)  # a bare torch file: an earlier tsrsa's
    altered = damaged(data.draw, {FILE: file}, [FILE]).get(FILE, b"")
    fitted = resumed(checkpoint_source, altered)
    if checked and altered != original:
        assert fitted is None, "a checkpoint whose bytes changed was resumed"


def junk(draw):
    """A value of a drawn kind: numbers (NaN, inf, huge), text, None, containers, tensors of drawn
    shapes and dtypes."""
    return draw(st.one_of(
        st.none(), st.booleans(), st.integers(-3, 10**6), st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0]),
        st.floats(-10, 10), st.text(max_size=4), st.lists(st.integers(0, 3), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        st.builds(lambda shape, dtype, fill: torch.full(shape, fill).to(dtype),
                  st.lists(st.integers(0, 17), max_size=3).map(tuple),
                  st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64, torch.uint8, torch.bool]),
                  st.sampled_from([0.0, 1.0, -1.0, math.nan, math.inf]))))


def paths(value, prefix=()):
    """Every path (keys and indices) into the nested dicts and lists of ``value``."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from paths(item, (*prefix, i))


def altered_state(draw, state: dict) -> tuple[dict, list]:
    """``state`` with one to three entries anywhere in it deleted, or replaced by a drawn value (or, for
    a tensor, by one of another shape or dtype, or with a NaN), and the paths of the entries deleted.
    The parameter numbers of the optimiser's groups are left alone: only the run's own optimiser can
    tell how many each group has, and ``Checkpoint.load(optimizer=...)`` checks them
    (tests/test_checkpoint_checks.py)."""
    state, deleted = copy.deepcopy(state), []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from([p for p in paths(state) if p and "params" not in p[2:4]]))
        parent = state
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, tuple):  # AdamW's betas: replaced whole
            continue
        old = parent[path[-1]]
        action = draw(st.sampled_from(["delete", "junk", "tensor"]))
        if action == "delete":
            del parent[path[-1]]
            deleted.append(path)
        elif action == "tensor" and torch.is_tensor(old) and old.numel():
            new = old.clone()
            change = draw(st.sampled_from(["nan", "shape", "dtype"]))
            if change == "nan" and new.is_floating_point():
                new.view(-1)[draw(st.integers(0, new.numel() - 1))] = math.nan
            elif change == "shape":
                new = torch.zeros(*[s + 1 for s in new.shape], 1)
            else:
                new = new.to(draw(st.sampled_from([torch.float64, torch.float16, torch.int32, torch.bool])))
            parent[path[-1]] = new
        else:
            parent[path[-1]] = junk(draw)
    return state, deleted


@seed(0)
@FUZZ
@given(data=st.data())
def test_checkpoint_contents_resume_or_refuse(checkpoint_source, data):
    state, deleted = altered_state(data.draw, checkpoint_source[3])
    buffer = io.BytesIO()
    torch.save(state, buffer)
    file = buffer.getvalue()
    if data.draw(st.booleans(), label="with its checksum line"):  # as Checkpoint.save writes it
        file = HEADER + hashlib.sha256(file).hexdigest().encode() + b"\n" + file
    fitted = resumed(checkpoint_source, file)
    # what the loop restores whole: a checkpoint missing one of its entries, or one of its weights, is refused
    essential = [p for p in deleted if len(p) == 1 or p[0] in ("network", "best_state", "start_state")]
    if essential:
        assert fitted is None, f"a checkpoint without {essential[0]} was resumed"
