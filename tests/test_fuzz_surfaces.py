"""Fuzzing three surfaces where bad input once leaked: saved model folders, the statistical forecasters and
``sample``. Every call either succeeds with a valid result or refuses with a ValueError/TypeError raised
by tsrsa's own code (never one from numpy, pandas, torch or statsmodels), and a call that refuses changes
nothing: not the files of the folder, not the fitted model, not the frame or arrays passed in.

- **Model folders**: a saved seasonal naive model, ETS model and distribution-loss DLinear have one of
  their files altered byte-wise (bits flipped, bytes set, inserted, deleted, appended, the file cut
  short) or, for the checks behind the parsers, in its structure (a JSON value replaced, deleted or
  repeated; an array of arrays.npz replaced by one of another shape, dtype or with NaN, inf or huge
  values, or removed), with the checksums and sizes of config.json forged to match or not, so that
  the checks behind the checksums are reached too; ``tsrsa.load`` loads a model that forecasts
  finite values, or refuses by name, and warns of nothing.
- **Statistical forecasters**: ETS, ARIMA, Theta and the seasonal naive fitted on degenerate series
  (constant, zero, two alternating values, a step, a spike, a repeated season, a line) and random ones
  of every scale from 1e-200 to 1e200, then updated with more values; each fit forecasts finite values
  (a constant series forecasts the constant) or refuses and leaves the estimator unfitted.
- **sample**: ``sample(n, h, random_state=...)`` with any n (up to 10**15, negative, a float, None),
  h and seed, under a limit of 32 MiB per request (``TSRSA_MAX_REQUEST_BYTES``); it draws n finite
  paths per series or refuses, the global random state left as it was.

Profiles (``tests/conftest.py``): the normal suite runs the "ci" profile, a fixed seed and a few dozen
examples in all, in a few seconds; ``TSRSA_FUZZ=long`` runs the "long" profile, seed 0 and at least
2,000 examples a surface (about an hour, most of it ARIMA fits)::

    TSRSA_FUZZ=long python -m pytest -p no:cacheprovider tests/test_fuzz_surfaces.py
"""
from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import shutil
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st

import tsrsa
from tsrsa import ARIMAForecaster, DLinearForecaster, ETSForecaster, SeasonalNaiveForecaster, ThetaForecaster
from tsrsa.estimator.persistence import CONFIG_CHECKSUM, config_checksum

from conftest import make_panel

PACKAGE = Path(__file__).resolve().parents[1] / "tsrsa"
LONG = os.environ.get("TSRSA_FUZZ") == "long"
#: examples per surface: the profile's own in the long run, fewer in the normal suite (a fit costs)
EXAMPLES = {"folders": 2000 if LONG else 25, "statistical": 2000 if LONG else 10, "sample": 2000 if LONG else 25}
FUZZ = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
H = 3


def from_tsrsa(error: BaseException) -> bool:
    """Whether ``error`` was raised by a line of tsrsa's own code (not from a library it calls)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)


def refused_by_tsrsa(error: BaseException) -> None:
    assert isinstance(error, (ValueError, TypeError)) and from_tsrsa(error), "".join(traceback.format_exception(error))


def forecast(model) -> np.ndarray:
    return model.predict()["yhat"].to_numpy()


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ---------------------------------------------------------------------- model folders
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Three fitted models, each saved once, with its forecast."""
    train = make_panel(n_series=2, length=30)
    models = {
        "naive": SeasonalNaiveForecaster(h=H, season_length=6, conformal_windows=2).fit(train),
        "ets": ETSForecaster(h=H, season_length=1, trend=None).fit(train),
        "dlinear": DLinearForecaster(h=H, input_size=6, loss="normal", max_epochs=1, start=None,
                                     random_state=0).fit(train),
    }
    root = tmp_path_factory.mktemp("saved")
    out = {}
    for name, model in models.items():
        model.save(root / name)
        out[name] = (model, root / name, forecast(model))
    return out


MUTATIONS = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(0, 7)),
    st.tuples(st.just("set"), st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), st.floats(0, 1, exclude_max=True), st.integers(1, 64)),
    st.tuples(st.just("append"), st.just(0.0), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True), st.just(0)),
)


def mutated(data: bytes, mutation) -> bytes:
    kind, where, arg = mutation
    i = min(int(where * len(data)), max(len(data) - 1, 0))
    if kind == "flip" and data:
        return data[:i] + bytes([data[i] ^ (1 << arg)]) + data[i + 1:]
    if kind == "set" and data:
        return data[:i] + bytes([arg]) + data[i + 1:]
    if kind == "insert":
        return data[:i] + arg + data[i:]
    if kind == "delete":
        return data[:i] + data[i + arg:]
    if kind == "append":
        return data + arg
    if kind == "truncate":
        return data[:i]
    return data


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=4)
ARRAYS = st.one_of(
    st.builds(lambda shape, value: np.full(shape, value), st.lists(st.integers(0, 4), max_size=3).map(tuple),
              st.sampled_from([0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e300, 3.5e38, 1e-300])),
    st.builds(lambda n: np.arange(n), st.integers(0, 5)),
    st.just(np.array(["text"])), st.just(np.zeros((2, 2), dtype=bool)), st.just(np.zeros(3, dtype=np.complex128)),
)


#: one structural edit: where (a fraction of the file's values or arrays), what, a JSON value, an array, a
#: special number and where in the array it goes
SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 3.5e38, 1e-300, 0.0, -1.0])
EDITS = st.tuples(st.floats(0, 1, exclude_max=True), st.sampled_from(["replace", "delete", "repeat", "special"]),
                  JSON_VALUES, ARRAYS, SPECIAL, st.floats(0, 1, exclude_max=True))


def structural_edit(name: str, data: bytes, edit) -> bytes:
    """``data`` (the file ``name``) with one JSON value replaced, deleted or repeated, or one array of an
    npz set to NaN, inf, a huge or tiny number at one place, replaced or removed (``edit``, from
    :data:`EDITS`); as it was when it does not parse."""
    where, action, value, array, special, place = edit
    if name.endswith(".json"):
        try:
            doc = json.loads(data)
        except ValueError:
            return data
        paths = []

        def walk(node, path):
            paths.append(path)
            children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for key, child in children:
                walk(child, (*path, key))

        walk(doc, ())
        if len(paths) < 2:
            return data
        path = paths[1 + int(where * (len(paths) - 1))]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if action in ("replace", "special"):
            parent[path[-1]] = copy.deepcopy(value)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.insert(path[-1], copy.deepcopy(parent[path[-1]]))
        return json.dumps(doc).encode()
    if name.endswith(".npz"):
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except Exception:  # noqa: BLE001 - already damaged beyond reading
            return data
        key = sorted(arrays)[int(where * len(arrays))]
        if action in ("special", "repeat"):  # the same shape, one value set to NaN, inf, a huge or a tiny number
            values = np.array(arrays[key], dtype=np.float64)
            if values.size:
                values.flat[int(place * values.size)] = special
            arrays[key] = values
        elif action == "replace":
            arrays[key] = array
        else:
            del arrays[key]
        out = io.BytesIO()
        np.savez(out, **arrays)
        return out.getvalue()
    return data


def forge(folder: Path) -> None:
    """config.json's checksums and sizes rewritten to match the files as they now are (when it still parses)."""
    try:
        config = json.loads((folder / "config.json").read_text())
        files = config["files"]
        config["files"] = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in files}
        config["sizes"] = {name: (folder / name).stat().st_size for name in files}
        config[CONFIG_CHECKSUM] = config_checksum(config)
    except (ValueError, TypeError, KeyError, AttributeError, OSError, UnicodeDecodeError):
        return  # an edit that left config.json unreadable: nothing to forge
    (folder / "config.json").write_text(json.dumps(config))


@seed(0)
@settings(max_examples=EXAMPLES["folders"], **FUZZ)
@given(which=st.sampled_from(["naive", "ets", "dlinear"]),
       target=st.sampled_from(["config.json", "state.json", "arrays.npz", "weights.pt"]),
       mutations=st.lists(MUTATIONS, max_size=3), edit=st.one_of(st.none(), EDITS), forged=st.booleans())
@example(which="naive", target="arrays.npz", mutations=[], forged=True,  # NaN in the look-back: a NaN forecast
         edit=(0.99, "special", None, np.zeros(0), np.nan, 0.0))
@example(which="naive", target="state.json", mutations=[], forged=True,  # fewer last timestamps than ids
         edit=(0.65, "delete", None, np.zeros(0), 0.0, 0.0))
def test_an_altered_model_folder_loads_or_is_refused_and_nothing_changes(saved, which, target, mutations, edit,
                                                                          forged):
    model, source, expected = saved[which]
    if not (source / target).exists():
        target = "arrays.npz"
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "m"
        shutil.copytree(source, folder)
        content = (folder / target).read_bytes()
        if edit is not None or not mutations:
            content = structural_edit(target, content, edit or (0.0, "delete", None, np.zeros(0), 0.0, 0.0))
        for mutation in mutations:
            content = mutated(content, mutation)
        (folder / target).write_bytes(content)
        if forged:
            forge(folder)
        files = {p.name: p.read_bytes() for p in folder.iterdir()}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # silent: a warning is a failure too
                loaded = tsrsa.load(folder)
        except BaseException as error:  # noqa: B036 - anything but tsrsa's refusal fails the test
            refused_by_tsrsa(error)
        else:
            try:
                out = forecast(loaded)
            except BaseException as error:  # noqa: B036 - a loaded model may refuse to forecast, cleanly
                refused_by_tsrsa(error)
            else:
                assert out.shape == expected.shape and np.isfinite(out).all()
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == files
    assert np.array_equal(forecast(model), expected)


# ---------------------------------------------------------------------- statistical forecasters
@st.composite
def series(draw):
    """A degenerate or random series of 12 to 60 values, at a scale from 1e-200 to 1e200."""
    n = draw(st.integers(12, 60))
    kind = draw(st.sampled_from(["constant", "zero", "alternating", "step", "spike", "season", "line", "random",
                                 "integers", "near_constant"]))
    scale = 10.0 ** draw(st.sampled_from([0, 0, 0, 3, -3, 15, -15, 200, -200]))
    a, b = draw(st.floats(-100, 100)), draw(st.floats(-100, 100))
    t = np.arange(n, dtype=np.float64)
    if kind == "constant":
        y = np.full(n, a)
    elif kind == "zero":
        y = np.zeros(n)
    elif kind == "alternating":
        y = np.where(t % 2 == 0, a, b)
    elif kind == "step":
        y = np.where(t < draw(st.integers(1, n - 1)), a, b)
    elif kind == "spike":
        y = np.full(n, a)
        y[draw(st.integers(0, n - 1))] = b
    elif kind == "season":
        pattern = np.array(draw(st.lists(st.floats(-100, 100), min_size=2, max_size=4)))
        y = pattern[np.arange(n) % len(pattern)]
    elif kind == "line":
        y = a + b * t
    elif kind == "random":
        y = a + b * np.random.default_rng(draw(st.integers(0, 2 ** 16))).standard_normal(n)
    elif kind == "integers":
        y = np.random.default_rng(draw(st.integers(0, 2 ** 16))).integers(0, 3, n).astype(np.float64)
    else:
        y = a + 1e-12 * np.random.default_rng(draw(st.integers(0, 2 ** 16))).standard_normal(n)
    return pd.Series(y * scale, index=pd.RangeIndex(n))


ESTIMATORS = st.one_of(
    st.builds(ETSForecaster, h=st.just(H), season_length=st.sampled_from([1, 2, 4]),
              error=st.sampled_from(["add", "auto"]), initialization=st.sampled_from(["estimated", "heuristic"])),
    st.builds(ARIMAForecaster, h=st.just(H), season_length=st.sampled_from([1, 2, 4]),
              order=st.sampled_from(["auto", (1, 0, 0), (0, 1, 1)]), seasonal_order=st.sampled_from(["auto", None])),
    st.builds(ThetaForecaster, h=st.just(H), season_length=st.sampled_from([1, 2, 4])),
    st.builds(SeasonalNaiveForecaster, h=st.just(H), season_length=st.sampled_from([1, 2, 4])),
)


@seed(0)
@settings(max_examples=EXAMPLES["statistical"], **FUZZ)
@given(model=ESTIMATORS, y=series(), more=series())
@example(model=ThetaForecaster(h=H, season_length=1), y=pd.Series(np.full(20, 42.0)),  # Theta's drift on a constant
         more=pd.Series(np.full(20, 42.0)))
@example(model=ARIMAForecaster(h=H, season_length=1), y=pd.Series(np.full(20, 42.0)),  # refused before
         more=pd.Series(np.full(20, 42.0)))
def test_a_statistical_forecaster_forecasts_a_degenerate_or_random_series_or_refuses(model, y, more):
    params, given_y = model.get_params(), y.copy()
    try:
        model.fit(y)
    except BaseException as error:  # noqa: B036
        refused_by_tsrsa(error)
        assert vars(model) == params  # nothing of a fit is left behind
        pd.testing.assert_series_equal(y, given_y)
        return
    pd.testing.assert_series_equal(y, given_y)
    out = forecast(model)
    assert out.shape == (H,) and np.isfinite(out).all()
    if np.ptp(y.to_numpy()) == 0:
        np.testing.assert_allclose(out, y.iloc[0], rtol=1e-12, atol=0)
    new = pd.Series(more.to_numpy()[:5], index=pd.RangeIndex(len(y), len(y) + min(5, len(more))))
    try:
        model.update(new)
    except BaseException as error:  # noqa: B036
        refused_by_tsrsa(error)
        assert np.array_equal(forecast(model), out)  # the model is left as it was
    else:
        assert np.isfinite(forecast(model)).all()


# ---------------------------------------------------------------------- sample
@pytest.fixture(scope="module")
def sampler():
    train = make_panel(n_series=2, length=30)
    model = DLinearForecaster(h=H, input_size=6, loss="normal", max_epochs=1, start=None, random_state=0).fit(train)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TSRSA_MAX_REQUEST_BYTES", "32MiB")
        yield model, forecast(model)


ANYTHING = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True), st.text(max_size=3),
                     st.lists(st.integers(0, 3), max_size=2))


@seed(0)
@settings(max_examples=EXAMPLES["sample"], **FUZZ)
@given(n=st.one_of(st.integers(-3, 300), st.integers(-10 ** 15, 10 ** 15), ANYTHING),
       h=st.one_of(st.none(), st.integers(-2, H + 2), ANYTHING),
       random_state=st.one_of(st.none(), st.integers(-3, 2 ** 70), ANYTHING))
@example(n=10 ** 9, h=None, random_state=0)  # numpy's MemoryError, before
def test_sample_draws_paths_or_refuses_and_nothing_changes(sampler, n, h, random_state):
    model, expected = sampler
    global_state = np.random.get_state()[1].copy()
    try:
        out = model.sample(n, h, random_state=random_state)
    except BaseException as error:  # noqa: B036
        refused_by_tsrsa(error)
    else:
        steps = H if h is None else h
        assert len(out) == 2 * n * steps and np.isfinite(out["yhat"].to_numpy()).all()
        assert set(out["sample"]) == set(range(n))
    assert np.array_equal(np.random.get_state()[1], global_state)
    assert np.array_equal(forecast(model), expected)
