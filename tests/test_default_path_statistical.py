"""The default path of the statistical forecasters (ETS, ARIMA, Theta, seasonal naive), as
test_default_path.py walks it for the networks: fit → predict → save → load → the same forecast → update →
cross_validate on one short series, a panel and one long series, and the command line at the defaults."""
from __future__ import annotations

import os

import pytest

from test_default_path import STATISTICAL, walk_the_command_line, walk_the_default_path

#: ARIMA's stepwise order search (about 20 statsmodels fits a series; twice: the fit and the cross-validation's)
#: takes 10-40 s on the panel and on the long series here: those two cases run with TSRSA_SLOW_TESTS=1, and
#: ARIMA's short series and command line (3-7 s each) in the slow tier
SLOW = pytest.mark.skipif(not os.environ.get("TSRSA_SLOW_TESTS"), reason=(
    "ARIMA's order search on a panel or a long series takes 10-40 s; set TSRSA_SLOW_TESTS=1 to run it"))
#: ETS's search over every admissible form (15 a series with a season) takes 9-13 s on the panel and the long
#: series: those run in the slow tier (make test-slow)
IN_SLOW_TIER = {("ARIMAForecaster", "short"), ("ETSForecaster", "panel"), ("ETSForecaster", "long")}
CASES = [pytest.param(cls, name, marks=[SLOW] if cls == "ARIMAForecaster" and name != "short"
                      else [pytest.mark.slow] if (cls, name) in IN_SLOW_TIER else [])
         for cls in STATISTICAL for name in ("short", "panel", "long")]


@pytest.mark.parametrize("cls, name", CASES, ids=[f"{p.values[0].removesuffix('Forecaster')}-{p.values[1]}"
                                                  for p in CASES])
def test_the_default_path(small_budget, tmp_path, cls, name):
    cv, h = walk_the_default_path(tmp_path, cls, name)
    assert set(cv["step"]) == set(range(1, h + 1)) and cv["yhat"].notna().all()


@pytest.mark.parametrize("cls", [pytest.param(cls, marks=[pytest.mark.slow] if cls == "ARIMAForecaster" else [])
                                 for cls in STATISTICAL])
def test_the_command_line_fits_and_predicts_at_the_defaults(small_budget, tmp_path, capsys, cls):
    forecast, h = walk_the_command_line(tmp_path, capsys, cls)
    assert len(forecast) == h and forecast["yhat"].notna().all()
