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
            rows.append(_row("gate0", h, seed, 0.40 + 0.01 * i + 0.002 * seed))
        for seed in (0, 1):  # the promoted option ran two of the three seeds, 0.005 better in each
            rows.append(_row("default", h, seed, 0.40 + 0.01 * i + 0.002 * seed - 0.005))
    rows.append(_row("default", 96, 0, 0.1, model="TransformerForecaster"))  # no earlier Transformer run: no row
    return pd.DataFrame(rows)


LINEAGE = ["lr1e-3", "gate0", "default"]


def test_promotion_is_paired_by_seed_and_averaged_over_four_horizons():
    table = accuracy.candidate_table(_results(), LINEAGE)
    rsa = table[table["model"] == "RSA"]
    assert set(rsa["change"]) == {"gate0 → default"}  # lr1e-3 has no runs here: skipped
    assert list(rsa["horizon"]) == ["96", "192", "336", "720", "**average**"]
    assert (rsa["seeds"] == 2).all()  # seed 2 has no run of the new default: left out of every pair
    average = rsa.iloc[-1]
    assert average["after MSE"] == "0.411 ± 0.001"  # seeds 0 and 1 average 0.410 and 0.412 over horizons
    assert average["after − before"] == "-0.005 ± 0.000" and average["after wins"] == "2/2"
    assert "Transformer" not in set(table["model"])


def test_each_model_steps_through_the_lineage_names_it_ran():
    rows = [_row(v, 96, 0, mse, model=m) for v, mse, m in [
        ("lr1e-3", 0.50, "RSAForecaster"), ("gate0", 0.45, "RSAForecaster"), ("default", 0.44, "RSAForecaster"),
        ("lr1e-3", 0.52, "TransformerForecaster"), ("default", 0.47, "TransformerForecaster")]]
    table = accuracy.candidate_table(pd.DataFrame(rows), LINEAGE).set_index(["model", "change"])["after − before"]
    assert table.to_dict() == {("RSA", "lr1e-3 → gate0"): "-0.050", ("RSA", "gate0 → default"): "-0.010",
                               ("Transformer", "lr1e-3 → default"): "-0.050"}


def test_no_average_unless_all_four_horizons_were_compared():
    table = accuracy.candidate_table(_results(horizons=(96, 192, 336)), LINEAGE)
    assert "**average**" not in set(table["horizon"]) and len(table) == 3


def test_screen_change_is_variant_minus_the_same_seed_of_the_reference():
    results = _results()
    screen = pd.DataFrame([_row("gate0+dropout0.3", 336, 0, 0.43, best_epoch=1)])
    table = accuracy.screen_table(screen, results, LINEAGE)
    reference, variant = table.iloc[0], table.iloc[1]
    assert reference["variant"] == "gate0 (reference)" and reference["ETTh1 H336 seed 0: MSE (change)"] == "0.4200"
    assert variant["ETTh1 H336 seed 0: MSE (change)"] == "0.4300 (+0.0100)"
    assert variant["ETTh1 H336 seed 0: best epoch"] == "1"


def test_rem_init_pairs_each_data_start_with_its_own_paper_start():
    import rem_init

    rows = []
    for seed in (0, 1, 2):
        rows += [_row("default", 96, seed, 0.40), _row("paper-init", 96, seed, 0.41),
                 _row("lr1e-3", 96, seed, 0.50), _row("lr1e-3+paper-init", 96, seed, 0.48),
                 _row("gate0", 96, seed, 0.42), _row("gate0+paper-init", 96, seed, 0.43),
                 _row("lr1e-3", 96, seed, 0.45, model="TransformerForecaster"),
                 _row("default", 96, seed, 0.39, model="TransformerForecaster")]
    rows.append(_row("lr1e-3+dropout0.3", 96, 0, 0.30))  # no paper-start counterpart: no row
    table = rem_init.comparison(pd.DataFrame(rows), {"default": "default", "gate0": "default"}).set_index("variant")
    assert list(table.index) == ["default", "gate0", "lr1e-3"]
    assert table.loc["default", "data start − paper start"] == "-0.010 ± 0.000"
    assert table.loc["default", "data start wins"] == "3/3" and table.loc["default", "Transformer MSE"] == "0.390 ± 0.000"
    assert table.loc["gate0", "Transformer MSE"] == "0.390 ± 0.000"  # its twin is the Transformer's default
    assert table.loc["lr1e-3", "data start − paper start"] == "0.020 ± 0.000"
    assert table.loc["lr1e-3", "data start wins"] == "0/3" and table.loc["lr1e-3", "Transformer MSE"] == "0.450 ± 0.000"


def test_twin_variants_match_the_configurations_shared_options():
    import rem_init

    twins = rem_init.twin_variants()
    assert twins["default"] == "default" and twins["gate0"] == "default" and twins["lr1e-3"] == "lr1e-3"
    assert twins["lr1e-3+dropout0.3"] == "lr1e-3+dropout0.3"


def test_twin_table_pairs_rsa_variants_with_their_twin_variant():
    import rem_init

    rows = [_row("gate0", 96, 0, 0.42), _row("default", 96, 0, 0.40), _row("paper-init", 96, 0, 0.41),
            _row("default", 96, 0, 0.43, model="TransformerForecaster")]
    table = rem_init.twin_comparison(pd.DataFrame(rows), {"gate0": "default"}).set_index("variant")
    assert list(table.index) == ["default", "gate0 (Transformer: default)"]  # paper-init is left to comparison
    assert table.loc["default", "RSA − Transformer"] == "-0.030"
    assert table.loc["gate0 (Transformer: default)", "RSA − Transformer"] == "-0.010"


def test_patch_len_table_keeps_the_overridden_variants_apart(tmp_path, monkeypatch):
    import patch_len

    rows = [_row("lr1e-3+patch_len=8", 96, 0, 0.40), _row("default+patch_len=8", 96, 0, 0.30),
            _row("default+max_epochs=1,patch_len=8", 96, 0, 0.20)]
    pd.DataFrame(rows).to_csv(tmp_path / "patch_len.csv", index=False)
    monkeypatch.setattr(patch_len, "RESULTS", tmp_path / "patch_len.csv")
    monkeypatch.setattr(patch_len, "SPEED", tmp_path / "missing.csv")
    lines = [line for line in patch_len.table().splitlines() if line.startswith("| RSA")]
    assert [line.split(" | ")[1:3] for line in lines] == [
        ["default", "8"], ["default+max_epochs=1", "8"], ["lr1e-3", "8"]]
    assert [line.split(" | ")[5].split(" / ")[0] for line in lines] == ["0.300", "0.200", "0.400"]


def test_screen_compares_each_variant_with_the_configuration_it_changes():
    results = pd.concat([_results(), pd.DataFrame([_row("lr1e-3", 336, 0, 0.45)])])
    screen = pd.DataFrame([_row("lr1e-3+dropout0.3", 336, 0, 0.44), _row("default", 336, 0, 0.41),
                           _row("gate0", 336, 0, 0.42)])
    table = accuracy.screen_table(screen, results, LINEAGE).set_index("variant")["ETTh1 H336 seed 0: MSE (change)"]
    assert table["lr1e-3 (reference)"] == "0.4500" and table["gate0 (reference)"] == "0.4200"
    assert table["lr1e-3+dropout0.3"] == "0.4400 (-0.0100)" and table["gate0"] == "0.4200 (-0.0300)"
    assert table["default"] == "0.4100 (-0.0100)"
    assert accuracy.reference_of("default", LINEAGE) == "gate0" and accuracy.reference_of("other", LINEAGE) == "lr1e-3"
