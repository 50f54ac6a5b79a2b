"""The library's defaults are the documented, measured configuration, and the long-horizon
configurations set nothing beyond the protocol's budget: their tables are the defaults'."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tsrsa

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmark_configuration.md"
CONFIGS = ROOT / "benchmarks" / "configs"
NEURAL = {"RSA": "RSAForecaster", "Transformer": "TransformerForecaster", "LSTM": "LSTMForecaster",
          "DLinear": "DLinearForecaster"}


def table_after(heading: str) -> list[list[str]]:
    """The cells of the first markdown table after the line that starts with ``heading``."""
    lines = PAGE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without the header and its rule


def models_of(cell: str) -> list[str]:
    return list(NEURAL) if cell == "all neural" else [name.strip() for name in cell.split(",")]


def code(cell: str) -> str:
    match = re.fullmatch(r"`([^`]*)`", cell)
    assert match, f"expected a `value` cell, got {cell!r}"
    return match.group(1)


#: what a long-horizon configuration may set: the protocol's training budget (and the seasonal naive's
#: season per data set), nothing a model chooses
BUDGET = ("batch_size", "max_epochs", "early_stopping_patience")
PROTOCOL = {"SeasonalNaive": ("season_length",)}

DEFAULTS = table_after("## The library's defaults")
CONFIG_TABLE = table_after("**What the long-horizon configurations set.**")


def test_the_tables_are_found_and_cover_the_training_settings():
    documented = {code(row[0]) for row in DEFAULTS}
    assert {"batch_size", "max_epochs", "early_stopping_patience", "learning_rate", "gate_init"} <= documented
    assert {code(row[0]) for row in CONFIG_TABLE} >= set(BUDGET)


@pytest.mark.parametrize("row", DEFAULTS, ids=lambda row: row[0].strip("`"))
def test_every_default_constructor_equals_the_documented_configuration(row):
    name, models, value = code(row[0]), models_of(row[1]), json.loads(code(row[2]))
    from tsrsa.estimator.trainer import flat_params

    for model in models:
        cls = getattr(tsrsa, NEURAL[model])
        params = flat_params(cls(h=1).get_params(), cls)  # every option by its own name (the page's rows)
        assert params[name] == value, f"{NEURAL[model]}().{name} is {params[name]!r}, the page says {value!r}"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_a_benchmark_configuration_sets_only_what_the_page_documents(path):
    config = json.loads(path.read_text())
    allowed = {}
    for row in CONFIG_TABLE:
        for model in [m.strip() for m in row[1].split(",")]:
            allowed.setdefault(model, {})[code(row[0])] = row[2]
    documented = allowed.get(path.stem, {})
    set_here = {**config["params"], **{k: v for d in config["datasets"].values() for k, v in d.items()}}
    for key, value in set_here.items():
        assert key in documented, f"{path.name} sets {key}, which the page's table does not list for {path.stem}"
        if documented[key] != "per data set":
            assert value == json.loads(code(documented[key])), f"{path.name}: {key}={value!r} is not the page's"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_a_benchmark_configuration_holds_only_the_protocols_budget(path):
    config = json.loads(path.read_text())
    allowed = set(BUDGET) | set(PROTOCOL.get(path.stem, ()))
    beyond = set(config["params"]) - allowed
    assert not beyond, f"{path.name} sets {sorted(beyond)} beyond the protocol's budget {sorted(allowed)}"
    for dataset, params in config["datasets"].items():
        assert set(params) <= allowed, f"{path.name}: {dataset} sets {sorted(set(params) - allowed)}"


def test_the_default_variant_is_what_a_constructor_without_arguments_trains_with():
    from tsrsa.benchmarking.compat import grouped_kwargs
    from tsrsa.benchmarking.configs import load_config
    from tsrsa.estimator.trainer import flat_params

    for name, estimator in NEURAL.items():
        config = load_config(name, CONFIGS)
        cls = getattr(tsrsa, estimator)
        model = cls(h=1, **grouped_kwargs(cls, config.params_for("ETTh1")))
        plain = flat_params(cls(h=1).get_params(), cls)  # every option by its own name, as the configurations
        changed = {k: v for k, v in flat_params(model.get_params(), cls).items() if plain[k] != v}
        assert set(changed) <= set(BUDGET), f"{name}'s default variant changes {sorted(changed)}"
        assert config.variant_label("default") == "default"
        # a variant naming an option at its library default is the default, so no such variant exists
        for variant, options in config.variants.items():
            same = {k for k, v in options.items() if k not in config.params and plain.get(k, object()) == v}
            assert not same, f"{name}: variant {variant} sets {sorted(same)} to the library's default"
