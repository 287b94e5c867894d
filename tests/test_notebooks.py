"""What each notebook's smoke run must show, in numbers."""

from __future__ import annotations


def table(results: dict, stem: str, name: str) -> list[dict]:
    """One results table of one notebook."""
    return results[stem]["tables"][name]


def test_every_verdict_row_is_decided(smoke_results) -> None:
    for stem, result in smoke_results.items():
        for row in result["tables"]["verdict"]:
            assert {"claim", "paper", "ours", "held"} <= set(row), stem
            assert row["ours"] not in ("", None), (stem, row)


def test_metrics_by_hand_reproduces_the_worked_examples(smoke_results) -> None:
    apfd = {r["order"]: r["apfd"] for r in table(smoke_results, "metrics_by_hand", "apfd_icsm99")}
    assert apfd == {"A-B-C-D-E": 0.5, "E-D-C-B-A": 0.64, "C-E-B-A-D": 0.84}
    gini = table(smoke_results, "metrics_by_hand", "gini_example")
    assert [r["test"] for r in gini] == ["D", "A", "C", "B"]
    assert [r["gini"] for r in gini] == [0.64, 0.62, 0.54, 0.34]
    exposure = table(smoke_results, "metrics_by_hand", "exposure_example")
    assert round(exposure[0]["exposure"], 2) == 19.93 and exposure[-1]["exposure"] == 0.0


def test_metrics_by_hand_toy_and_min_k(smoke_results) -> None:
    toy = {r["score"]: r["auroc"] for r in table(smoke_results, "metrics_by_hand", "md_toy")}
    assert toy["RMD"] > 0.9 and toy["MD"] < 0.75
    sentences = table(smoke_results, "metrics_by_hand", "min_k_sentences")
    assert len(sentences) == 4
    for row in sentences:
        # Min-K% averages the least likely tokens, so it sits below the mean log-prob
        assert row["min_20pct"] <= row["mean_logprob"] < 0
    verdict = table(smoke_results, "metrics_by_hand", "verdict")
    assert all(r["held"] == "yes" for r in verdict[:3])


def test_deepgini_models_and_mixed_sets(smoke_results) -> None:
    accuracy = table(smoke_results, "deepgini_apfd", "accuracy")
    assert {r["model"] for r in accuracy} == {"lenet1", "lenet5"}
    assert all(0.8 < r["test_accuracy"] <= 1 for r in accuracy)
    adversarial = {(r["model"], r["attack"]): r for r in table(smoke_results, "deepgini_apfd", "adversarial")}
    for model in ("lenet1", "lenet5"):
        assert [adversarial[model, a]["examples_added"] for a in ("FGSM-0.01", "FGSM-0.1", "BIM", "JSMA", "CW-L2")] == [100, 100, 100, 30, 30]
        # the larger FGSM step fools the model more often; FGSM stays within its epsilon
        assert adversarial[model, "FGSM-0.1"]["accuracy_on_them"] < adversarial[model, "FGSM-0.01"]["accuracy_on_them"]
        assert adversarial[model, "FGSM-0.01"]["mean_linf"] <= 0.0100001
    sets = {(r["model"], r["test_set"]): r["tests"] for r in table(smoke_results, "deepgini_apfd", "test_sets")}
    assert sets["lenet1", "original"] == 540 and sets["lenet1", "original+adversarial"] == 540 + 360


def test_deepgini_apfd_table(smoke_results) -> None:
    rows = table(smoke_results, "deepgini_apfd", "apfd")
    assert {"dataset", "model", "test_set", "method", "apfd", "apfd_normalized", "seconds"} <= set(rows[0])
    assert len(rows) == 2 * 2 * 29
    by = {(r["model"], r["test_set"], r["method"]): r for r in rows}
    for model in ("lenet1", "lenet5"):
        for test_set in ("original", "original+adversarial"):
            gini, rand = by[model, test_set, "DeepGini"], by[model, test_set, "random"]
            assert abs(rand["apfd_normalized"] - 0.5) < 0.1
            assert gini["apfd_normalized"] > rand["apfd_normalized"] + 0.2
            assert gini["apfd"] < gini["apfd_normalized"] or test_set == "original"
    assert all(0 <= r["apfd_normalized"] <= 1 and r["seconds"] >= 0 for r in rows)


def test_deepgini_cost_scaling_retraining_verdict(smoke_results) -> None:
    bench = table(smoke_results, "deepgini_apfd", "cam_benchmark")
    assert all(r["same_order"] for r in bench)
    scaling = table(smoke_results, "deepgini_apfd", "scaling")
    assert {r["n_tests"] for r in scaling} == {1000, 4000} and len(scaling) == 2 * 8
    retraining = table(smoke_results, "deepgini_apfd", "retraining")
    for model in ("lenet1", "lenet5"):
        methods = {r["method"] for r in retraining if r["model"] == model}
        assert {"none", "DeepGini", "random"} < methods and len(methods) == 4  # plus the best coverage method
    assert all(0 <= r["adversarial_accuracy"] <= 1 for r in retraining)
    summary = table(smoke_results, "deepgini_apfd", "retraining_summary")
    assert {r["percent"] for r in summary} == {0, 5, 10} and all(r["runs"] == 1 for r in summary)
    verdict = table(smoke_results, "deepgini_apfd", "verdict")
    assert len(verdict) == 5 and all(r["held"] in ("yes", "no", "partly") for r in verdict)
