"""Versioned benchmark configurations: one JSON file per model under ``benchmarks/configs/``.

A file names the estimator class and its hyperparameters::

    {
      "estimator": "RSAForecaster",             # a tsrsa forecaster class (whitelisted)
      "notes": "...",                           # what the configuration is, in words
      "params": {...},                          # the "default" variant: the protocol's budget
      "datasets": {"ETTh2": {...}},             # per-data-set settings (all variants)
      "variants": {"gate_init=-2": {"gate_init": -2.0}}   # alternatives, on top of params
    }

A variant's name is its options: the ``option=value`` pairs in which it differs from what runs by
default (``params`` where they set the option, the estimator's own default otherwise), sorted by
option name and joined by commas (``gate_init=-2,learning_rate=1e-4``); "default" is the
configuration with no differing option. :func:`variant_name` spells a name out and
:func:`load_config` rejects a file whose variant names disagree with their options, so a name in
``results/*.csv`` always says what ran. The harness itself sets ``h``, ``input_size``,
``val_size``, ``random_state``, ``num_threads``, ``accelerator`` and ``verbose``; a file never does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

#: arguments that belong to the protocol and the run, never to a configuration file
HARNESS_PARAMS = ("h", "input_size", "val_size", "random_state", "num_threads", "accelerator", "verbose")

DEFAULT = "default"


def format_value(value) -> str:
    """A value as a variant name spells it: powers of ten from 0.01 down as ``1e-k`` (a learning
    rate of 0.001 is ``1e-3``), other numbers in the shortest ``%g`` form (``0.3``, ``-2``, ``0``),
    booleans and None in lower case, text as it is."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        for k in range(2, 13):
            if abs(value) == float(f"1e-{k}"):
                return f"{'-' if value < 0 else ''}1e-{k}"
        return format(value, "g")
    return str(value)


def variant_name(options: dict) -> str:
    """The name of the variant that sets ``options`` on top of a configuration's params:
    ``option=value`` pairs sorted by option and joined by commas; "default" when there are none.

    >>> variant_name({"learning_rate": 0.001, "gate_init": 0.0})
    'gate_init=0,learning_rate=1e-3'
    """
    if not options:
        return DEFAULT
    return ",".join(f"{key}={format_value(value)}" for key, value in sorted(options.items()))


def parse_variant_name(name: str) -> dict[str, str]:
    """The options a variant name spells out, values as text ({} for "default").

    >>> parse_variant_name("gate_init=0,learning_rate=1e-3")
    {'gate_init': '0', 'learning_rate': '1e-3'}
    """
    if name == DEFAULT:
        return {}
    options = {}
    for part in name.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"variant name {name!r}: {part!r} is not option=value")
        options[key] = value
    return options


@dataclass
class ModelConfig:
    name: str  # the short name used on the command line (the file's stem)
    estimator: str  # forecaster class name
    params: dict = field(default_factory=dict)
    datasets: dict = field(default_factory=dict)
    variants: dict = field(default_factory=dict)
    path: Path | None = None

    def params_for(self, dataset: str, variant: str = DEFAULT) -> dict:
        """Hyperparameters of ``variant`` on ``dataset``: params, then dataset, then variant."""
        if variant != DEFAULT and variant not in self.variants:
            raise ValueError(
                f"{self.name} has no variant {variant!r}; known: {[DEFAULT, *sorted(self.variants)]}"
                f" (add it under 'variants' in {self.path})"
            )
        out = dict(self.params)
        out.update(self.datasets.get(dataset, {}))
        if variant != DEFAULT:
            out.update(self.variants[variant])
        return out

    def options_of(self, variant: str = DEFAULT, overrides: dict | None = None) -> dict:
        """The options of ``variant`` (plus ``overrides``) that differ from what runs by default:
        ``params`` where they set the option, else the estimator's own default."""
        if variant != DEFAULT and variant not in self.variants:
            self.params_for("", variant)  # raises, naming the known variants
        merged = {**(self.variants.get(variant, {})), **(overrides or {})}
        from tsrsa.estimator.trainer import flat_defaults

        return differing(merged, {**flat_defaults(self.estimator_class()), **self.params})  # options by their names

    def variant_label(self, variant: str = DEFAULT, overrides: dict | None = None) -> str:
        """The name of what runs: ``variant`` with ``overrides`` on top, spelled by its options
        ("max_epochs=1" for the default with ``--max-epochs 1``)."""
        return variant_name(self.options_of(variant, overrides))

    def estimator_class(self):
        """The forecaster class, looked up among tsrsa's own forecasters only."""
        from tsrsa.forecasters import FORECASTERS

        classes = {cls.__name__: cls for cls in FORECASTERS}
        if self.estimator not in classes:
            raise ValueError(f"{self.path}: unknown estimator {self.estimator!r}; use one of {sorted(classes)}")
        return classes[self.estimator]


def differing(options: dict, reference: dict) -> dict:
    """The items of ``options`` whose value is not ``reference``'s (an option ``reference`` lacks
    always differs)."""
    return {key: value for key, value in options.items()
            if key not in reference or not _same(reference[key], value)}


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b


def check_variant_names(config: ModelConfig) -> None:
    """Raise unless every variant is named by the options in which it differs from ``params``."""
    for name, options in config.variants.items():
        expected = variant_name(config.options_of(name))
        if name != expected:
            raise ValueError(
                f"{config.path}: variant {name!r} sets {options}; its name must be {expected!r} "
                f"(the options that differ from params, sorted, option=value joined by commas)")


def load_config(name: str, config_dir) -> ModelConfig:
    """Read ``<config_dir>/<name>.json`` (``name`` as on the command line, e.g. "DLinear")."""
    path = Path(config_dir) / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in Path(config_dir).glob("*.json"))
        raise ValueError(f"no configuration {path}; known models: {known}")
    raw = json.loads(path.read_text())
    unknown = set(raw) - {"estimator", "params", "datasets", "variants", "notes"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    config = ModelConfig(name=name, estimator=raw["estimator"], params=raw.get("params", {}),
                         datasets=raw.get("datasets", {}), variants=raw.get("variants", {}), path=path)
    for where, params in [("params", config.params), *[(f"datasets.{k}", v) for k, v in config.datasets.items()],
                          *[(f"variants.{k}", v) for k, v in config.variants.items()]]:
        # the harness gives the protocol's look-back, unless a variant chooses its own on validation
        reserved = sorted(k for k in set(params) & set(HARNESS_PARAMS) if (k, params[k]) != ("input_size", "auto"))
        if reserved:
            raise ValueError(f"{path}: {where} sets {reserved}, which the harness sets itself")
    check_variant_names(config)
    return config
