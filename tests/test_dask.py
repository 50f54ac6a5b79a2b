"""A saved forecaster mapped over partitions of series on a real Dask cluster (two worker processes).

Every result over the cluster is compared with the same call in this process, row for row; the
workers are separate processes that read the model from its folder.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.integrations.dask import backtest, backtest_partitions, cross_validate_partitions, predict_partitions

from conftest import make_panel

distributed = pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'tsrsa[dask]'")
dd = pytest.importorskip("dask.dataframe", reason="Dask is an optional extra: pip install 'tsrsa[dask]'")

H = 4


@pytest.fixture(scope="module")
def client():
    before = dict(os.environ)  # starting the workers sets OMP_NUM_THREADS=1 and the like here too
    try:
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None)
        with cluster, distributed.Client(cluster) as running:
            yield running
    finally:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture(scope="module")
def panel() -> pd.DataFrame:
    return make_panel(n_series=12, length=60)


@pytest.fixture(scope="module")
def network(tmp_path_factory, panel) -> str:
    """DLinear fitted with conformal intervals, saved."""
    path = tmp_path_factory.mktemp("models") / "dlinear"
    model = tsrsa.DLinearForecaster(h=H, input_size=12, max_epochs=1, random_state=0, conformal_windows=2,
                                    trainer={"num_threads": 1})
    model.fit(panel).save(path)
    return str(path)


@pytest.fixture(scope="module")
def naive(tmp_path_factory, panel) -> str:
    path = tmp_path_factory.mktemp("models") / "naive"
    tsrsa.SeasonalNaiveForecaster(h=H, season_length=6).fit(panel).save(path)
    return str(path)


def as_single(result: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """A dask result in the single process' order and id dtype (dask reads strings as pyarrow strings)."""
    ordered = result.sort_values(list(like.columns[:2])).reset_index(drop=True)
    return ordered.astype({like.columns[0]: like[like.columns[0]].dtype})


@pytest.mark.processes
def test_predict_over_two_workers_equals_one_process(client, network, panel):
    before = panel.copy()
    single = tsrsa.load(network).predict(3, df=panel, level=[80])
    with distributed.get_task_stream(client) as stream:
        spread = predict_partitions(network, panel, 3, level=[80], client=client, n_partitions=3)
    pd.testing.assert_frame_equal(spread, single)  # same rows in the same order, before any sorting
    assert list(spread.columns) == ["unique_id", "ds", "yhat", "yhat_lo_80", "yhat_hi_80"]
    assert len(spread) == 12 * 3 and (spread["yhat_lo_80"] < spread["yhat_hi_80"]).all()
    assert len({task["worker"] for task in stream.data}) == 2  # both worker processes took partitions
    pd.testing.assert_frame_equal(panel, before)  # the user's frame is left as it was
    one = predict_partitions(network, panel, client=client, n_partitions=50)  # more partitions than series
    pd.testing.assert_frame_equal(one, tsrsa.load(network).predict(df=panel))


@pytest.mark.processes
def test_known_future_covariates_reach_each_partition(client, panel, tmp_path):
    rng = np.random.default_rng(0)
    history = panel.assign(promo=rng.integers(0, 2, len(panel)).astype(float))
    model = tsrsa.DLinearForecaster(h=H, input_size=12, max_epochs=1, random_state=0, trainer={"num_threads": 1},
                                    covariates={"future": ["promo"]}).fit(history)
    model.save(tmp_path / "promo")
    future = model.make_future_frame().assign(promo=1.0)
    future.loc[future["unique_id"].isin(["s1", "s7"]), "promo"] = 0.0
    single = model.predict(df=history, future_df=future)
    spread = predict_partitions(tmp_path / "promo", history, future_df=future, client=client, n_partitions=3)
    pd.testing.assert_frame_equal(spread, single)
    other = model.predict(df=history, future_df=future.assign(promo=0.0))
    assert not np.allclose(spread["yhat"], other["yhat"])  # the covariate moves the forecasts
    with pytest.raises(TypeError, match="future_df must be a pandas DataFrame"):
        predict_partitions(tmp_path / "promo", history, future_df=dd.from_pandas(future, npartitions=1))


@pytest.mark.processes
def test_backtest_over_the_cluster_equals_one_process_and_its_last_window_is_predict(client, network, panel):
    model = tsrsa.load(network)
    single = backtest(model, panel, n_windows=3, step_size=2, level=[80])
    spread = backtest_partitions(network, panel, n_windows=3, step_size=2, level=[80], client=client)
    pd.testing.assert_frame_equal(spread, single)
    assert list(single.columns) == ["unique_id", "ds", "cutoff", "step", "y", "yhat", "yhat_lo_80", "yhat_hi_80"]
    assert len(single) == 12 * 3 * H and single["cutoff"].nunique() == 3
    last = single[single["cutoff"] == single["cutoff"].max()].reset_index(drop=True)
    earlier = panel.groupby("unique_id").head(60 - H)  # every series without its last h steps
    expected = model.predict(df=earlier, level=[80])
    np.testing.assert_allclose(last[["yhat", "yhat_lo_80", "yhat_hi_80"]], expected[["yhat", "yhat_lo_80",
                                                                                     "yhat_hi_80"]])
    pd.testing.assert_series_equal(last["ds"], expected["ds"])
    actual = panel.sort_values(["unique_id", "ds"]).groupby("unique_id").tail(H)  # ids in sorted order, as the model's
    pd.testing.assert_series_equal(last["y"], actual["y"].reset_index(drop=True))


@pytest.mark.processes
def test_a_dask_frame_gives_a_lazy_frame_of_the_same_rows(client, network, panel, tmp_path):
    single = tsrsa.load(network).predict(df=panel, level=[80])
    groups = [panel[panel["unique_id"].isin(ids)] for ids in (["s0", "s1", "s10"], ["s2", "s3"])]
    rest = panel[~panel["unique_id"].isin(["s0", "s1", "s10", "s2", "s3"])]
    frame = dd.concat([dd.from_pandas(part, npartitions=1) for part in (*groups, rest)])
    lazy = predict_partitions(network, frame, level=[80])  # the running client
    assert isinstance(lazy, dd.DataFrame) and lazy.npartitions == 3
    pd.testing.assert_frame_equal(as_single(lazy.compute(), single), single)
    by_id = dd.from_pandas(panel.set_index("unique_id"), npartitions=2, sort=True)  # known divisions
    pd.testing.assert_frame_equal(as_single(predict_partitions(network, by_id).compute(), single),
                                  single[["unique_id", "ds", "yhat"]])
    frame.to_parquet(tmp_path / "series")
    from_files = predict_partitions(network, str(tmp_path / "series"), level=[80])
    pd.testing.assert_frame_equal(as_single(from_files.compute(), single), single)


@pytest.mark.processes
def test_cross_validate_of_a_per_series_model_equals_one_process(client, naive, network, panel):
    single = tsrsa.load(naive).cross_validate(panel, n_windows=3, step_size=2)
    spread = cross_validate_partitions(naive, panel, n_windows=3, step_size=2, client=client, n_partitions=4)
    pd.testing.assert_frame_equal(spread, single)
    assert len(spread) == 12 * 3 * H
    with pytest.raises(ValueError, match="fitted on all series at once.*backtest_partitions"):
        cross_validate_partitions(network, panel, client=client)


@pytest.mark.processes
def test_update_then_predict_equals_predict_on_the_recent_history(client, network, panel):
    """The module's advice in place of a mapped update, for a fixed-window network."""
    new = make_panel(n_series=12, length=68, seed=1).groupby("unique_id").tail(8)  # 8 steps after the fit's end
    updated = tsrsa.load(network).update(new).predict()
    recent = pd.concat([panel, new]).groupby("unique_id").tail(20)
    spread = predict_partitions(network, recent, client=client)
    pd.testing.assert_frame_equal(spread, updated)
    assert not np.allclose(spread["yhat"], tsrsa.load(network).predict()["yhat"])


@pytest.mark.processes
def test_bad_arguments_are_refused_with_the_fix(client, network, naive, panel, tmp_path):
    with pytest.raises(ValueError, match="not a directory holding a saved tsrsa model.*model.save"):
        predict_partitions(tmp_path / "nothing", panel, client=client)
    with pytest.raises(TypeError, match="model_path must be the folder of a saved model"):
        predict_partitions(tsrsa.load(network), panel, client=client)
    with pytest.raises(ValueError, match="n_partitions=0 must be >= 1"):
        predict_partitions(network, panel, client=client, n_partitions=0)
    with pytest.raises(TypeError, match="n_partitions must be None or an int"):
        predict_partitions(network, panel, client=client, n_partitions=2.0)
    with pytest.raises(TypeError, match="df must be a pandas DataFrame, a dask DataFrame or a path"):
        predict_partitions(network, panel.to_dict(), client=client)
    with pytest.raises(ValueError, match="no column 'y'.*target_col"):
        predict_partitions(network, panel.rename(columns={"y": "value"}), client=client)
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        predict_partitions(network, panel, client="tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="needs prediction intervals calibrated at fit"):
        predict_partitions(naive, panel, level=[80], client=client)  # refused here, before the cluster
    with pytest.raises(ValueError, match="dask frame keeps its own partitions"):
        predict_partitions(network, dd.from_pandas(panel, npartitions=2), n_partitions=2)
    split = dd.from_pandas(panel, npartitions=5)  # by rows: series cut in two
    with pytest.raises(ValueError, match="is in partitions .* of the dask frame.*shuffle"):
        predict_partitions(network, split).compute()


@pytest.mark.processes
def test_the_benchmark_times_both_ways_and_finds_the_same_forecasts(client, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import distributed_predict
    finally:
        sys.path.pop(0)
    output = tmp_path / "distributed_predict.csv"
    rows = distributed_predict.run([30], ["DLinear"], client, steps=48, fit_series=12, output=output,
                                   command="python benchmarks/distributed_predict.py --sizes 30")
    assert [(r["mode"], r["n_series"], r["rows"], r["equal"]) for r in rows] == \
        [("one process", 30, 240, ""), ("dask", 30, 240, True)]
    text = distributed_predict.section(pd.read_csv(output))
    assert "| DLinear | 30 |" in text and "| yes |" in text and "A projection, not a measurement" in text
    assert "`python benchmarks/distributed_predict.py --sizes 30`" in text


def test_importing_the_module_leaves_dask_out():
    probe = "import tsrsa.integrations.dask, sys; print(*(m in sys.modules for m in ('dask', 'distributed', 'torch')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]  # each is imported by the call that needs it
