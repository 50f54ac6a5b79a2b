"""polars and pyarrow frames in, the same kind out: every entry point against the pandas reference, bit for bit."""
import numpy as np
import pandas as pd
import pytest

import tsrsa
import tsrsa.data
from tsrsa.data.native import as_kind, frame_kind, to_pandas

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def panel(n=72, tz="Europe/Paris"):
    rng = np.random.default_rng(0)
    t = np.arange(n)
    ds = pd.date_range("2024-03-01", periods=n, freq="h", tz=tz)  # crosses the spring clock change
    frames = [pd.DataFrame({"unique_id": sid, "ds": ds,
                            "y": 10 + k + np.sin(2 * np.pi * t / 24) + 0.1 * rng.standard_normal(n)})
              for k, sid in enumerate(["a", "b"])]
    return pd.concat(frames, ignore_index=True)


def native(df, kind):
    return pl.from_pandas(df) if kind == "polars" else pa.Table.from_pandas(df, preserve_index=False)


def back(out, kind):
    """A native answer as pandas, checking its kind on the way."""
    if kind == "polars":
        assert isinstance(out, pl.DataFrame)
    else:
        assert isinstance(out, pa.Table)
    return out.to_pandas()


def assert_same(out, reference, kind):
    got = back(out, kind)
    pd.testing.assert_frame_equal(got, reference.reset_index(drop=True), check_exact=True)


MODELS = {
    "naive": lambda: tsrsa.SeasonalNaiveForecaster(h=6, season_length=24),
    "theta": lambda: tsrsa.ThetaForecaster(h=6, season_length=24),
    "dlinear": lambda: tsrsa.DLinearForecaster(h=6, input_size=24, max_epochs=2, random_state=0),
}


@pytest.mark.parametrize("kind", ["polars", "pyarrow"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_fit_predict_and_predict_df_answer_in_the_kind_given(kind, name):
    df = panel()
    reference = MODELS[name]().fit(df)
    model = MODELS[name]().fit(native(df, kind))
    assert model.frame_kind_ == kind
    assert_same(model.predict(), reference.predict(), kind)
    tail = df.groupby("unique_id").tail(60)
    assert_same(model.predict(df=native(tail, kind)), reference.predict(df=tail), kind)
    # a pandas frame given to the same model gets pandas back
    pd.testing.assert_frame_equal(model.predict(df=tail), reference.predict(df=tail), check_exact=True)


@pytest.mark.parametrize("kind", ["polars", "pyarrow"])
def test_time_zone_survives_the_round_trip(kind):
    df = panel()
    out = back(tsrsa.SeasonalNaiveForecaster(h=6, season_length=24).fit(native(df, kind)).predict(), kind)
    assert str(out["ds"].dt.tz) == "Europe/Paris"
    assert out["ds"].iloc[0] == df["ds"].iloc[-1] + pd.Timedelta(hours=1)


@pytest.mark.parametrize("kind", ["polars", "pyarrow"])
def test_update_then_predict_matches_pandas(kind):
    df = panel(96)
    head = df.groupby("unique_id").head(72)
    tail = df.groupby("unique_id").tail(24)
    reference = tsrsa.ThetaForecaster(h=6, season_length=24).fit(head).update(tail)
    model = tsrsa.ThetaForecaster(h=6, season_length=24).fit(native(head, kind)).update(native(tail, kind))
    assert_same(model.predict(), reference.predict(), kind)


@pytest.mark.parametrize("kind", ["polars", "pyarrow"])
def test_cross_validate_and_fitted_answer_in_the_kind_given(kind):
    df = panel()
    model = tsrsa.SeasonalNaiveForecaster(h=6, season_length=24)
    assert_same(model.cross_validate(native(df, kind), n_windows=2), model.cross_validate(df, n_windows=2), kind)
    fitted = tsrsa.SeasonalNaiveForecaster(h=6, season_length=24).fit(native(df, kind))
    assert_same(fitted.fitted(), tsrsa.SeasonalNaiveForecaster(h=6, season_length=24).fit(df).fitted(), kind)
    assert_same(fitted.make_future_frame(),
                tsrsa.SeasonalNaiveForecaster(h=6, season_length=24).fit(df).make_future_frame(), kind)


def test_saved_model_remembers_the_kind_and_pandas_files_are_unchanged(tmp_path):
    df = panel()
    tsrsa.ThetaForecaster(h=6, season_length=24).fit(native(df, "polars")).save(tmp_path / "polars")
    tsrsa.ThetaForecaster(h=6, season_length=24).fit(df).save(tmp_path / "pandas")
    loaded = tsrsa.load(tmp_path / "polars")
    assert isinstance(loaded.predict(), pl.DataFrame)
    assert isinstance(tsrsa.load(tmp_path / "pandas").predict(), pd.DataFrame)
    assert "frame_kind" not in (tmp_path / "pandas" / "state.json").read_text()
    assert '"frame_kind": "polars"' in (tmp_path / "polars" / "state.json").read_text()


@pytest.mark.parametrize("kind", ["polars", "pyarrow"])
def test_write_shards_takes_native_frames(kind, tmp_path):
    df = panel()
    tsrsa.data.write_shards(native(df, kind), tmp_path / "native", n_files=2)
    tsrsa.data.write_shards(df, tmp_path / "pandas", n_files=2)
    for name in ("part-00000.parquet", "part-00001.parquet"):
        got = pa.parquet.read_table(tmp_path / "native" / name).to_pandas()
        want = pa.parquet.read_table(tmp_path / "pandas" / name).to_pandas()
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_lazy_frame_is_refused_with_the_fix():
    lazy = pl.from_pandas(panel()).lazy()
    with pytest.raises(TypeError, match=r"collect\(\)"):
        tsrsa.SeasonalNaiveForecaster(h=6, season_length=24).fit(lazy)


def test_a_rejected_native_call_changes_nothing():
    df = panel()
    model = tsrsa.SeasonalNaiveForecaster(h=6, season_length=24).fit(df)
    before = model.predict()
    bad = pl.from_pandas(df).with_columns(pl.lit(float("inf")).alias("y"))
    with pytest.raises(ValueError):
        model.update(bad)
    pd.testing.assert_frame_equal(model.predict(), before)
    assert model.frame_kind_ == "pandas"


def test_helpers_leave_pandas_and_other_objects_alone():
    df = panel()
    assert to_pandas(df) is df and frame_kind(df) == "pandas"
    assert frame_kind([1, 2]) == "pandas" and to_pandas([1, 2]) == [1, 2]
    assert as_kind(df, "pandas") is df
    assert frame_kind(pl.from_pandas(df)) == "polars"
    assert frame_kind(pa.Table.from_pandas(df)) == "pyarrow"


def test_model_sets_answer_in_the_kind_given(tmp_path):
    df = panel(96)
    members = lambda: [tsrsa.SeasonalNaiveForecaster(h=6, season_length=24),  # noqa: E731
                       tsrsa.ThetaForecaster(h=6, season_length=24)]
    multi = tsrsa.MultiForecaster(members()).fit(pl.from_pandas(df))
    reference = tsrsa.MultiForecaster(members()).fit(df)
    assert_same(multi.predict(), reference.predict(), "polars")
    assert_same(multi.cross_validate(pl.from_pandas(df), n_windows=2), reference.cross_validate(df, n_windows=2),
                "polars")
    multi.save(tmp_path / "multi")
    assert isinstance(tsrsa.load(tmp_path / "multi").predict(), pl.DataFrame)
    auto = tsrsa.AutoForecaster(h=6, models=members(), season_length=24).fit(pa.Table.from_pandas(df))
    alone = tsrsa.AutoForecaster(h=6, models=members(), season_length=24).fit(df)
    assert_same(auto.predict(), alone.predict(), "pyarrow")
    auto.save(tmp_path / "auto")
    assert isinstance(tsrsa.load(tmp_path / "auto").predict(), pa.Table)
