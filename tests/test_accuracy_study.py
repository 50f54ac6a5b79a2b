"""Scripts of benchmarks/ (accuracy.py, rem_init.py, patch_len.py): their tables, from made-up rows."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import accuracy  # noqa: E402  (a script of benchmarks/, importable beside rem_init)


def _row(variant, horizon, seed, mse, model="RSAForecaster", best_epoch=2):
    return {"dataset": "ETTh1", "horizon": horizon, "model": model, "variant": variant, "seed": seed,
            "mse": mse, "mae": mse, "input_size": 96, "train_fraction": 1.0, "device": "cpu",
            "train_seconds": 1.0, "best_epoch": best_epoch}


def _results(horizons=(96, 192, 336, 720)):
    rows = []
    for i, h in enumerate(horizons):
        for seed in (0, 1, 2):
            rows.append(_row("gate_init=0", h, seed, 0.40 + 0.01 * i + 0.002 * seed))
        for seed in (0, 1):  # the next step of the chain ran two of the three seeds, 0.005 better in each
            rows.append(_row("default", h, seed, 0.40 + 0.01 * i + 0.002 * seed - 0.005))
    rows.append(_row("default", 96, 0, 0.1, model="TransformerForecaster"))  # no other Transformer run: no row
    return pd.DataFrame(rows)


LR3 = "gate_init=0,learning_rate=1e-3"  # RSA with the library's learning rate and gate start
CHAIN = [LR3, "gate_init=0", "default"]
TWINS = {LR3: "learning_rate=1e-3", "gate_init=0": "default", "default": "default"}


def test_a_step_is_paired_by_seed_and_averaged_over_four_horizons():
    table = accuracy.step_table(_results(), CHAIN, TWINS)
    assert list(table["model"]) == ["RSA"] and list(table["change"]) == ["gate_init=0 → default"]  # LR3: no runs
    row = table.iloc[0]
    assert row["seeds"] == 2  # seed 2 has no run of the default: left out of every pair
    assert row["after MSE (average)"] == "0.411 ± 0.001"  # seeds 0 and 1 average 0.410 and 0.412 over horizons
    assert row["after − before"] == "-0.005 ± 0.000" and row["after wins"] == "2/2"
    assert row["per horizon: after − before (after wins)"] == "; ".join(
        f"H{h} -0.005 (2/2)" for h in (96, 192, 336, 720))


def test_each_model_steps_through_the_twins_of_the_chain():
    rows = [_row(v, 96, 0, mse, model=m) for v, mse, m in [
        (LR3, 0.50, "RSAForecaster"), ("gate_init=0", 0.45, "RSAForecaster"), ("default", 0.44, "RSAForecaster"),
        ("learning_rate=1e-3", 0.52, "TransformerForecaster"), ("default", 0.47, "TransformerForecaster")]]
    table = accuracy.step_table(pd.DataFrame(rows), CHAIN, TWINS).set_index(["model", "change"])
    assert table["per horizon: after − before (after wins)"].to_dict() == {
        ("RSA", f"{LR3} → gate_init=0"): "H96 -0.050 (1/1)", ("RSA", "gate_init=0 → default"): "H96 -0.010 (1/1)",
        ("Transformer", "learning_rate=1e-3 → default"): "H96 -0.050 (1/1)"}
    assert accuracy.chain_of("TransformerForecaster", CHAIN, TWINS) == ["learning_rate=1e-3", "default"]


def test_no_average_unless_all_four_horizons_were_compared():
    table = accuracy.step_table(_results(horizons=(96, 192, 336)), CHAIN, TWINS)
    assert len(table) == 1 and table.iloc[0]["after − before"] == ""
    assert table.iloc[0]["per horizon: after − before (after wins)"].count("(2/2)") == 3


def test_screen_change_is_variant_minus_the_same_seed_of_the_reference():
    results = _results()
    screen = pd.DataFrame([_row("dropout=0.3,gate_init=0", 336, 0, 0.43, best_epoch=1)])
    table = accuracy.screen_table(screen, results, CHAIN)
    reference, variant = table.iloc[0], table.iloc[1]
    assert reference["variant"] == "gate_init=0 (reference)"
    assert reference["ETTh1 H336 seed 0: MSE (change)"] == "0.4200"
    assert variant["ETTh1 H336 seed 0: MSE (change)"] == "0.4300 (+0.0100)"
    assert variant["ETTh1 H336 seed 0: best epoch"] == "1"


def test_rem_init_pairs_each_data_start_with_its_own_paper_start():
    import rem_init

    rows = []
    for seed in (0, 1, 2):
        rows += [_row("default", 96, seed, 0.40), _row("rem_init=paper", 96, seed, 0.41),
                 _row(LR3, 96, seed, 0.50), _row(f"{LR3},rem_init=paper", 96, seed, 0.48),
                 _row("gate_init=0", 96, seed, 0.42), _row("gate_init=0,rem_init=paper", 96, seed, 0.43),
                 _row("learning_rate=1e-3", 96, seed, 0.45, model="TransformerForecaster"),
                 _row("default", 96, seed, 0.39, model="TransformerForecaster")]
    rows.append(_row(f"dropout=0.3,{LR3}", 96, 0, 0.30))  # no paper-start counterpart: no row
    table = rem_init.comparison(pd.DataFrame(rows), TWINS).set_index("variant")
    assert list(table.index) == ["default", "gate_init=0", LR3]
    assert table.loc["default", "data start − paper start"] == "-0.010 ± 0.000"
    assert table.loc["default", "data start wins"] == "3/3"
    assert table.loc["default", "Transformer MSE"] == "0.390 ± 0.000"
    assert table.loc["gate_init=0", "Transformer MSE"] == "0.390 ± 0.000"  # its twin is the Transformer's default
    assert table.loc[LR3, "data start − paper start"] == "0.020 ± 0.000"
    assert table.loc[LR3, "data start wins"] == "0/3" and table.loc[LR3, "Transformer MSE"] == "0.450 ± 0.000"


def test_paper_variant_adds_the_paper_start_to_the_options():
    import rem_init

    assert rem_init.paper_variant("default") == "rem_init=paper"
    assert rem_init.paper_variant(LR3) == "gate_init=0,learning_rate=1e-3,rem_init=paper"


def test_twin_variants_match_the_configurations_shared_options():
    import rem_init

    twins = rem_init.twin_variants()
    earlier = "learning_rate=1e-4,loss=mse,lr_schedule=null,start=null"  # the earlier tables', less RSA's gate
    assert twins["default"] == "default" and twins[f"gate_init=-2,{earlier}"] == earlier and twins[earlier] == earlier
    assert twins["loss=mse,lr_schedule=null,start=null"] == "loss=mse,lr_schedule=null,start=null"
    dropout = "dropout=0.3,loss=mse,lr_schedule=null,start=null"
    assert twins[dropout] == dropout
    assert twins["start=ar"] == "start=ar" and twins["start=null"] == "start=null"
    # an option of RSA's own leaves the shared ones alone
    own = "gate_init=-2,learning_rate=1e-4,loss=mse,lr_schedule=null,rem_learning_rate=1e-2,start=null"
    assert twins[own] == earlier


def test_twin_table_pairs_rsa_variants_with_their_twin_variant():
    import rem_init

    rows = [_row("gate_init=0", 96, 0, 0.42), _row("default", 96, 0, 0.40), _row("rem_init=paper", 96, 0, 0.41),
            _row("default", 96, 0, 0.43, model="TransformerForecaster")]
    table = rem_init.twin_comparison(pd.DataFrame(rows), {"gate_init=0": "default"}).set_index("variant")
    assert list(table.index) == ["default", "gate_init=0 (Transformer: default)"]  # paper start: see comparison
    assert table.loc["default", "RSA − Transformer"] == "-0.030"
    assert table.loc["gate_init=0 (Transformer: default)", "RSA − Transformer"] == "-0.010"


def test_patch_len_table_keeps_the_configurations_apart(tmp_path, monkeypatch):
    import patch_len

    rows = [_row(f"{LR3},patch_len=8", 96, 0, 0.40), _row("patch_len=8", 96, 0, 0.30),
            _row("max_epochs=1,patch_len=8", 96, 0, 0.20)]
    pd.DataFrame(rows).to_csv(tmp_path / "patch_len.csv", index=False)
    monkeypatch.setattr(patch_len, "RESULTS", tmp_path / "patch_len.csv")
    monkeypatch.setattr(patch_len, "SPEED", tmp_path / "missing.csv")
    lines = [line for line in patch_len.table().splitlines() if line.startswith("| RSA")]
    assert [line.split(" | ")[1:3] for line in lines] == [["default", "8"], [LR3, "8"], ["max_epochs=1", "8"]]
    assert [line.split(" | ")[5].split(" / ")[0] for line in lines] == ["0.300", "0.400", "0.200"]


def test_screen_compares_each_variant_with_the_configuration_it_changes():
    results = pd.concat([_results(), pd.DataFrame([_row(LR3, 336, 0, 0.45)])])
    screen = pd.DataFrame([_row(f"dropout=0.3,{LR3}", 336, 0, 0.44), _row("default", 336, 0, 0.41),
                           _row("gate_init=0", 336, 0, 0.42), _row("rem_learning_rate=1e-2", 336, 0, 0.46)])
    table = accuracy.screen_table(screen, results, CHAIN).set_index("variant")["ETTh1 H336 seed 0: MSE (change)"]
    assert table[f"{LR3} (reference)"] == "0.4500" and table["gate_init=0 (reference)"] == "0.4200"
    assert table[f"dropout=0.3,{LR3}"] == "0.4400 (-0.0100)" and table["gate_init=0"] == "0.4200 (-0.0300)"
    assert table["default"] == "0.4100 (-0.0100)" and table["rem_learning_rate=1e-2"] == "0.4600 (+0.0450)"
    assert accuracy.reference_of("default", CHAIN) == "gate_init=0"
    assert accuracy.reference_of(f"{LR3},lr_schedule=cosine", CHAIN) == LR3


def test_the_rem_and_twin_tables_read_only_the_protocol_input():
    import rem_init

    from tsrsa.benchmarking.results import at_protocol_input

    rows = [dict(_row("default", 96, 0, 0.40), input_size=96),
            dict(_row("default", 96, 0, 0.43, model="TransformerForecaster"), input_size=96),
            dict(_row("default", 96, 0, 0.30, model="TransformerForecaster"), input_size=336),  # a long look-back
            dict(_row("default", 24, 0, 2.0), dataset="national_illness", input_size=36),
            dict(_row("default", 24, 0, 2.1, model="TransformerForecaster"), dataset="national_illness",
                 input_size=36)]
    kept = at_protocol_input(pd.DataFrame(rows))
    assert sorted(kept["input_size"]) == [36, 36, 96, 96]
    table = rem_init.twin_comparison(kept).set_index("dataset")
    assert table.loc["ETTh1", "RSA − Transformer"] == "-0.030"  # against the input-96 run alone
    assert table.loc["national_illness", "RSA − Transformer"] == "-0.100"
