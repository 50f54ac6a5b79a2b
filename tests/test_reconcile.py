"""Coherent forecasts of a hierarchy: ``tsrsa.aggregate`` and ``tsrsa.reconcile`` (hierarchicalforecast).

A tiny hierarchy: 4 stores -> 2 regions -> total, 8 weeks of daily data; the forecasts of statistical
forecasters (seasonal naive, Theta), a week ahead.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.hierarchy.methods import METHODS

pytest.importorskip("hierarchicalforecast")

SPEC = [["total"], ["total", "region"], ["total", "region", "store"]]
STORES = [("north", "s1"), ("north", "s2"), ("south", "s3"), ("south", "s4")]


def bottom_frame(n: int = 56) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t = np.arange(n)
    return pd.concat([pd.DataFrame({"region": r, "store": s, "ds": pd.date_range("2024-01-01", periods=n, freq="D"),
                                    "y": 10 + 3 * k + 3 * np.sin(2 * np.pi * t / 7) + rng.standard_normal(n)})
                      for k, (r, s) in enumerate(STORES)], ignore_index=True)


@pytest.fixture(scope="module")
def tree():
    Y_df, S_df, tags = tsrsa.aggregate(bottom_frame(), SPEC)
    naive = tsrsa.SeasonalNaiveForecaster(h=7, season_length=7, conformal_windows=3).fit(Y_df)
    theta = tsrsa.ThetaForecaster(h=7).fit(Y_df)
    return {"Y_df": Y_df, "S_df": S_df, "tags": tags, "naive": naive, "theta": theta,
            "forecasts": naive.predict(level=[80]), "fitted": naive.fitted()}


def wide(frame: pd.DataFrame, nodes, column: str = "yhat") -> np.ndarray:
    """(nodes, times) of ``column``, rows in ``nodes``' order."""
    return frame.pivot(index="unique_id", columns="ds", values=column).loc[list(nodes)].to_numpy()


def summing(tree) -> tuple[np.ndarray, list]:
    S_df = tree["S_df"]
    return S_df.drop(columns="unique_id").to_numpy(np.float64), S_df["unique_id"].tolist()


# ---------------------------------------------------------------------- aggregate
def test_aggregate_sums_the_bottom_series_into_every_node():
    bottom = bottom_frame()
    before = bottom.copy()
    Y_df, S_df, tags = tsrsa.aggregate(bottom, SPEC)
    pd.testing.assert_frame_equal(bottom, before)  # the grand total is added to a copy
    assert list(tags) == ["total", "total/region", "total/region/store"]
    assert S_df["unique_id"].tolist()[:3] == ["total", "total/north", "total/south"]
    y = Y_df.pivot(index="unique_id", columns="ds", values="y")
    by_store = bottom.pivot_table(index=["region", "store"], columns="ds", values="y")
    np.testing.assert_allclose(y.loc["total"].to_numpy(), by_store.sum().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.loc["total/north"].to_numpy(), by_store.loc["north"].sum().to_numpy(), rtol=1e-12)
    np.testing.assert_array_equal(y.loc["total/south/s3"].to_numpy(), by_store.loc[("south", "s3")].to_numpy())


def test_aggregate_refuses_a_spec_it_cannot_read():
    with pytest.raises(ValueError, match="not columns of df"):
        tsrsa.aggregate(bottom_frame(), [["total"], ["total", "area"]])
    with pytest.raises(TypeError, match="list of levels"):
        tsrsa.aggregate(bottom_frame(), ["total", "region"])


# ---------------------------------------------------------------------- the methods
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_gives_coherent_forecasts(tree, method):
    out = tsrsa.reconcile(tree["forecasts"], hierarchy=(tree["S_df"], tree["tags"]), df=tree["fitted"],
                          method=method)
    S, nodes = summing(tree)
    y = wide(out, nodes)  # (7 nodes, 7 steps)
    bottom = y[-S.shape[1]:]
    np.testing.assert_allclose(y, S @ bottom, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(out["yhat_base"].to_numpy(), tree["forecasts"]["yhat"].to_numpy())
    assert out[["unique_id", "ds"]].equals(tree["forecasts"][["unique_id", "ds"]])


def test_bottom_up_is_the_bottom_forecasts_summed_by_hand(tree):
    forecasts = tree["forecasts"]
    out = tsrsa.reconcile(forecasts, hierarchy=(tree["S_df"], tree["tags"]), method="bottom_up")
    base = {sid: forecasts.loc[forecasts["unique_id"] == sid, "yhat"].to_numpy(np.float64)
            for sid in forecasts["unique_id"].unique()}
    got = {sid: out.loc[out["unique_id"] == sid, "yhat"].to_numpy() for sid in base}
    stores = [f"total/{r}/{s}" for r, s in STORES]
    for sid in stores:
        np.testing.assert_array_equal(got[sid], base[sid])
    np.testing.assert_allclose(got["total/north"], base[stores[0]] + base[stores[1]], rtol=1e-15, atol=0)
    np.testing.assert_allclose(got["total/south"], base[stores[2]] + base[stores[3]], rtol=1e-15, atol=0)
    np.testing.assert_allclose(got["total"], ((base[stores[0]] + base[stores[1]]) + base[stores[2]]) + base[stores[3]],
                               rtol=1e-15, atol=0)


def test_mint_ols_is_the_closed_form(tree):
    S, nodes = summing(tree)
    yhat = wide(tree["forecasts"], nodes)
    expected = S @ np.linalg.solve(S.T @ S, S.T @ yhat)  # S (S'S)^-1 S' yhat
    for name in ("ols", "mint_ols"):
        out = tsrsa.reconcile(tree["forecasts"], hierarchy=(tree["S_df"], tree["tags"]), method=name)
        np.testing.assert_allclose(wide(out, nodes), expected, rtol=1e-12, atol=1e-12)


def test_mint_shrink_reads_the_residuals_of_the_fitted_values(tree):
    theta = tree["theta"]
    hierarchy = (tree["S_df"], tree["tags"])
    out = tsrsa.reconcile(theta.predict(), hierarchy=hierarchy, df=theta.fitted(), method="mint_shrink")
    other = tsrsa.reconcile(theta.predict(), hierarchy=hierarchy, df=tree["fitted"], method="mint_shrink")
    assert not np.allclose(out["yhat"], other["yhat"])  # other residuals, another W


# ---------------------------------------------------------------------- intervals
@pytest.mark.parametrize("intervals_method", ["normality", "bootstrap"])
def test_intervals_where_the_method_gives_them(tree, intervals_method):
    out = tsrsa.reconcile(tree["forecasts"], hierarchy=(tree["S_df"], tree["tags"]), df=tree["fitted"],
                          method="mint_shrink", level=[80, 95], intervals_method=intervals_method)
    assert list(out.columns) == ["unique_id", "ds", "yhat", "yhat_lo_80", "yhat_hi_80", "yhat_lo_95", "yhat_hi_95",
                                 "yhat_base", "yhat_lo_80_base", "yhat_hi_80_base"]
    assert (out["yhat_lo_95"] <= out["yhat_lo_80"]).all() and (out["yhat_lo_80"] < out["yhat_hi_80"]).all()
    assert (out["yhat_hi_80"] <= out["yhat_hi_95"]).all()
    if intervals_method == "normality":
        assert ((out["yhat_lo_80"] <= out["yhat"]) & (out["yhat"] <= out["yhat_hi_80"])).all()


def test_quantile_columns_give_the_spread_and_are_kept_as_base(tree):
    forecasts = tree["forecasts"].rename(columns={"yhat_lo_80": "yhat_q10", "yhat_hi_80": "yhat_q90"})
    out = tsrsa.reconcile(forecasts, hierarchy=(tree["S_df"], tree["tags"]), method="ols", level=[80])
    renamed = tsrsa.reconcile(tree["forecasts"], hierarchy=(tree["S_df"], tree["tags"]), method="ols", level=[80])
    np.testing.assert_allclose(out["yhat_lo_80"], renamed["yhat_lo_80"], rtol=1e-12)
    assert {"yhat_q10_base", "yhat_q90_base"} <= set(out.columns) and "yhat_q10" not in out.columns


# ---------------------------------------------------------------------- cross-validation
def test_cross_validate_output_is_reconciled_per_cutoff(tree):
    cv = tree["theta"].cross_validate(tree["Y_df"], n_windows=2, step_size=7)
    fitted = tree["theta"].fitted()
    hierarchy = (tree["S_df"], tree["tags"])
    out = tsrsa.reconcile(cv, hierarchy=hierarchy, df=fitted, method="mint_shrink")
    assert out[["unique_id", "ds", "cutoff", "step", "y"]].equals(cv[["unique_id", "ds", "cutoff", "step", "y"]])
    S, nodes = summing(tree)
    cutoffs = sorted(cv["cutoff"].unique())
    assert len(cutoffs) == 2
    for cutoff in cutoffs:
        mask = (cv["cutoff"] == cutoff).to_numpy()
        y = wide(out[mask], nodes)
        np.testing.assert_allclose(y, S @ y[-S.shape[1]:], rtol=0, atol=1e-9)
        alone = tsrsa.reconcile(cv[mask].drop(columns="cutoff"), hierarchy=hierarchy,
                                df=fitted[fitted["ds"] <= cutoff], method="mint_shrink")
        np.testing.assert_allclose(out.loc[mask, "yhat"].to_numpy(), alone["yhat"].to_numpy(), rtol=1e-12)


# ---------------------------------------------------------------------- the frames users bring
def test_own_column_names_row_order_and_index_are_kept(tree):
    names = {"unique_id": "node", "ds": "when", "y": "sales"}
    forecasts = tree["forecasts"].rename(columns=names).sample(frac=1.0, random_state=0)
    fitted = tree["fitted"].rename(columns=names)
    S_df = tree["S_df"].rename(columns={"unique_id": "node"})
    out = tsrsa.reconcile(forecasts, hierarchy=(S_df, tree["tags"]), df=fitted, method="mint_shrink",
                          id_col="node", time_col="when", target_col="sales")
    reference = tsrsa.reconcile(tree["forecasts"], hierarchy=(tree["S_df"], tree["tags"]), df=tree["fitted"],
                                method="mint_shrink")
    assert out.index.equals(forecasts.index) and out["node"].dtype == forecasts["node"].dtype
    np.testing.assert_allclose(out["yhat"].to_numpy(), reference.loc[forecasts.index, "yhat"].to_numpy(), rtol=1e-12)


def test_nothing_the_user_passes_is_changed(tree):
    forecasts, fitted, S_df, tags = tree["forecasts"], tree["fitted"], tree["S_df"], tree["tags"]
    copies = [forecasts.copy(deep=True), fitted.copy(deep=True), S_df.copy(deep=True), copy.deepcopy(tags)]
    level = [95, 80]
    tsrsa.reconcile(forecasts, hierarchy=(S_df, tags), df=fitted, method="mint_shrink", level=level)
    cv = tree["naive"].cross_validate(tree["Y_df"], n_windows=2)
    cv_copy = cv.copy(deep=True)
    tsrsa.reconcile(cv, hierarchy=(S_df, tags), df=fitted, method="top_down_average")
    for got, kept in zip((forecasts, fitted, S_df), copies):
        pd.testing.assert_frame_equal(got, kept)
    assert tags.keys() == copies[3].keys() and all(np.array_equal(tags[k], copies[3][k]) for k in tags)
    assert level == [95, 80]
    pd.testing.assert_frame_equal(cv, cv_copy)


# ---------------------------------------------------------------------- refusals
def test_refusals_name_what_is_wrong(tree):
    forecasts, fitted, hierarchy = tree["forecasts"], tree["fitted"], (tree["S_df"], tree["tags"])
    with pytest.raises(ValueError, match=r"lack nodes \['total/south/s4'\]"):
        tsrsa.reconcile(forecasts[forecasts["unique_id"] != "total/south/s4"], hierarchy=hierarchy, method="ols")
    stray = pd.concat([forecasts, forecasts.head(1).assign(unique_id="elsewhere")], ignore_index=True)
    with pytest.raises(ValueError, match=r"not nodes of the hierarchy.*'elsewhere'"):
        tsrsa.reconcile(stray, hierarchy=hierarchy, method="ols")
    with pytest.raises(ValueError, match=r"forecasts has no column \['unique_id'\].*id_col="):
        tsrsa.reconcile(forecasts.rename(columns={"unique_id": "node"}), hierarchy=hierarchy, method="ols")
    with pytest.raises(ValueError, match=r"df has no column \['y'\]"):
        tsrsa.reconcile(forecasts, hierarchy=hierarchy, df=fitted.rename(columns={"y": "sales"}))
    with pytest.raises(ValueError, match=r"'mint_shrink' .*reads in-sample fitted values.*df=model.fitted\(\)"):
        tsrsa.reconcile(forecasts, hierarchy=hierarchy)
    with pytest.raises(ValueError, match=r"no fitted values \(a 'yhat' column\)"):
        tsrsa.reconcile(forecasts, hierarchy=hierarchy, df=fitted.drop(columns="yhat"), method="mint_shrink")
    with pytest.raises(ValueError, match=r"no in-sample rows of nodes \['total'\]"):
        tsrsa.reconcile(forecasts, hierarchy=hierarchy, df=fitted[fitted["unique_id"] != "total"])
    with pytest.raises(ValueError, match=r"unknown reconciliation method 'mint'; the known ones are bottom_up, mint"):
        tsrsa.reconcile(forecasts, hierarchy=hierarchy, method="mint")
    with pytest.raises(TypeError, match=r"hierarchy must be the pair \(S_df, tags\)"):
        tsrsa.reconcile(forecasts, hierarchy=tree["S_df"], method="ols")
    with pytest.raises(ValueError, match="reads each node's spread from its base intervals"):
        tsrsa.reconcile(forecasts[["unique_id", "ds", "yhat"]], hierarchy=hierarchy, method="ols", level=[80])
    with pytest.raises(ValueError, match=r"'top_down' gives intervals only with intervals_method in \['bootstrap'\]"):
        tsrsa.reconcile(forecasts, hierarchy=hierarchy, method="top_down", level=[80])
    shifted = forecasts.copy()
    shifted.loc[shifted["unique_id"] == "total", "ds"] += pd.Timedelta(days=1)
    with pytest.raises(ValueError, match="every node needs the same timestamps"):
        tsrsa.reconcile(shifted, hierarchy=hierarchy, method="ols")
    with pytest.raises(ValueError, match="already hold"):
        tsrsa.reconcile(tsrsa.reconcile(forecasts, hierarchy=hierarchy, method="ols"), hierarchy=hierarchy,
                        method="ols")


def test_a_polars_frame_is_answered_in_polars(tree):
    pl = pytest.importorskip("polars")
    want = tsrsa.reconcile(tree["forecasts"], hierarchy=(tree["S_df"], tree["tags"]), method="ols")
    got = tsrsa.reconcile(pl.from_pandas(tree["forecasts"]), hierarchy=(tree["S_df"], tree["tags"]), method="ols")
    assert isinstance(got, pl.DataFrame)
    pd.testing.assert_frame_equal(got.to_pandas(), want.reset_index(drop=True), check_exact=True)
