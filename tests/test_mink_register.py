"""The Min-K% register against the paper's own numbers: Table 8 (Appendix A) in the memorization row, the TPR rows
quoting the paper's TPR sentence and that sentence checked against Table 7, and the detector count the page gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.mink import claims as K
from repro.mink import corpora as C
from repro.mink import detectors
from repro.mink import experiment as ex
from repro.params import PROFILES, resolve


def register(profile: str = "default") -> dict:
    return K.claims(resolve({"profile": profile}, ex.SPEC))


@pytest.mark.parametrize("profile", PROFILES)
def test_table8_row_carries_the_appendix_numbers_and_its_rule_holds_on_them(profile) -> None:
    params = resolve({"profile": profile}, ex.SPEC)
    row = K.claims(params)["memorization"]
    sets = K.table8_sets(params)
    # (members' lead at 1e-4) - (at 1e-5), per set, then the mean over the sets this run answers
    change = {"BoolQ": (0.81 - 0.69) - (0.71 - 0.68), "CommonsenseQA": (0.60 - 0.48) - (0.49 - 0.47)}
    assert sets == (["BoolQ"] if profile == "smoke" else ["BoolQ", "CommonsenseQA"])  # smoke: StrategyQA alone
    assert len(row.paper_values) == 4 * len(sets) and row.paper_values["BoolQ contaminated 1e-4"] == 0.81
    assert row.paper_estimate == pytest.approx(np.mean([change[s] for s in sets]), abs=1e-4)  # +0.09 or +0.095
    assert row.on_paper_numbers() == "held"
    # Table 8's average column gives the same direction: (0.64 - 0.53) - (0.55 - 0.51) = +0.07
    assert C.paper_lead_change(C.PAPER_ACCURACY_AVERAGE) == pytest.approx(0.07)
    assert row.rule.decide(0.07, 0.07, 0.07) == "held"
    assert "BoolQ lead +0.03 → +0.12" in row.paper and "(lead +0.04 → +0.11)" in row.paper
    assert ("CSQA lead +0.02 → +0.12" in row.paper) == ("CommonsenseQA" in sets)
    if profile == "default":
        assert row.paper_values["CommonsenseQA clean 1e-5"] == 0.47 and row.paper_estimate == pytest.approx(0.095)
    assert "not in" not in row.source and "Table 8" in row.source


def test_table8_statistic_is_the_same_whichever_way_the_pairs_are_read() -> None:
    for accuracy in C.PAPER_ACCURACY.values():
        (k_lo, k_hi), (c_lo, c_hi) = accuracy["clean"], accuracy["contaminated"]
        transposed = {"clean": (k_lo, c_lo), "contaminated": (k_hi, c_hi)}  # each pair both classes at one rate
        assert C.paper_lead_change(accuracy) == pytest.approx(C.paper_lead_change(transposed))
    # the review's average is not the mean of the two sets it gives: the table averages more sets
    two = np.mean([a["clean"][0] for a in C.PAPER_ACCURACY.values()])
    assert abs(two - C.PAPER_ACCURACY_AVERAGE["clean"][0]) > 0.05


def test_the_tpr_rows_quote_the_papers_tpr_sentence_not_table_3s() -> None:
    rows = register()
    for key in ("tpr_vs_ppl", "tpr_vs_zlib", "tpr_vs_lowercase"):
        assert rows[key].quote == K.TPR_SENTENCE and "Table 7" in rows[key].quote
        assert rows[key].on_paper_numbers() == "held"
    assert rows["vs_ppl"].quote == K.ABOVE_ALL
    assert rows["tpr_vs_ppl"].paper_estimate == pytest.approx(0.0375)  # (55+23+83+21)/4 - (52+24+74+17)/4 points
    assert rows["tpr_vs_ppl"].paper == "0.455 vs 0.4175" and rows["vs_ppl"].paper == "0.8575 vs 0.8375"  # unrounded


def test_the_tpr_sentence_checked_against_table_7() -> None:
    check = K.tpr_sentence_check()
    assert check["claimed"] == pytest.approx(0.122) and check["best"] == "PPL"
    assert check["printed"] == (46, 42)  # Table 7's average column
    gains = check["gains"]
    assert gains["points"] == pytest.approx(0.0375)
    assert gains["relative, average column"] == pytest.approx(46 / 42 - 1)  # 9.5 %
    assert gains["relative, per-set means"] == pytest.approx(45.5 / 41.75 - 1)  # 9.0 %
    assert gains["mean of the per-set relative gains"] == pytest.approx(
        np.mean([55 / 52 - 1, 23 / 24 - 1, 83 / 74 - 1, 21 / 17 - 1])
    )
    assert check["matches"] == []  # no reading of the averages gives 12.2 %
    assert check["sets_matching"] == ["IMDB"]  # 83 / 74 - 1 = 12.16 %
    assert check["sets_below"] == ["CommonsenseQA"]  # 23 against 24
    words = K.tpr_sentence_words()
    assert K.TPR_SENTENCE in words
    assert "46 % against 42 % for PPL" in words and "4 points, or 9.5 % relative" in words
    assert "3.75 points, or 9.0 %" in words and "9.3 %" in words
    assert "do not support it" in words and "IMDB alone (83 against 74) gives 12.2 %" in words
    assert "below PPL on CSQA (23 against 24)" in words


def test_table8_words_and_table_beside_ours() -> None:
    table = pd.DataFrame(
        {
            "set": ["strategyqa"] * 3,
            "paper set": ["BoolQ"] * 3,
            "model": ["base model", "learning rate 0.0001", "learning rate 1e-05"],
            "members' lead": [0.0, 0.2, 0.1],
            "non-members": [0.5, 0.55, 0.5],
        }
    )
    words = ex.paper_answers_words(table)
    assert "BoolQ +0.03 at 1e-5 and +0.12 at 1e-4" in words and "+0.090" in words
    # the words' number is the verdict row's paper column at smoke, where StrategyQA (BoolQ) alone has options
    assert register("smoke")["memorization"].paper_estimate == pytest.approx(0.09)
    assert ex.paper_answers_words(table.assign(**{"paper set": "TruthfulQA"})) == ""


def test_the_detector_count_is_read_from_the_code() -> None:
    n = 3
    target = pd.DataFrame(
        {"loss": [1.0, 2.0, 3.0], "mink_0.2": [-1.0, -2.0, -3.0], "minkpp_0.2": [0.1, 0.2, 0.3], "dcpdd": [0.3] * n}
    )
    ref = pd.DataFrame({"loss": [1.5, 2.5, 2.0]})
    scores = detectors.detector_scores(
        target, ["a", "bb", "ccc"], [0.2], lower=ref, refs={"Ref": ref, "Ref-small": ref}, neighbor_loss=np.ones(n)
    )
    methods = {name.partition(" ")[0] for name in scores}
    assert methods == {*detectors.DETECTORS, "Ref-small"} and len(detectors.DETECTORS) == 8
    auc = pd.DataFrame({"condition": ["main"] * 7 + ["lr"], "method": [*detectors.DETECTORS[:7], "Neighbor"]})
    assert ex.detector_words(auc) == "The chapter defines 8 detectors; this run scores 7 of them, without Neighbor."
    with_small = pd.concat([auc, pd.DataFrame({"condition": ["main"] * 2, "method": ["Neighbor", "Ref-small"]})])
    assert ex.detector_words(with_small).startswith("The chapter defines 8 detectors; this run scores 8 of them (and")


def test_share_words_state_the_item_lengths_the_matching_assumes() -> None:
    datasets = pd.DataFrame({"mean tokens": [60.0, 80.0, 100.0]})
    training = pd.DataFrame(
        {
            "condition": ["main", "main", "lr", "size_outlier 20000", "size_outlier 42000"],
            "experiment": ["main", "main", "lr", "size_outlier", "size_outlier"],
            "background_tokens": [8000, 8000, 8000, 20000, 42000],
            "contamination": [0.58, 0.58, 0.58, 0.37, 0.10],
        }
    )
    assert ex.matched_shares(training) == [(8000, 0.58), (20000, 0.37), (42000, 0.10)]
    words = ex.share_words(datasets, training)
    # 800 items of 80 tokens: 64k tokens, 38 % of 0.17M and 24 % of 0.27M
    assert "64k tokens" in words and "38 % of Fig. 5a's 0.17M-token corpus and 24 % of its 0.27M one" in words
    # our 58 % and 37 % matched to 0.17M and 0.27M: 0.58 * 170k / 800 = 123, 0.37 * 270k / 800 = 125 tokens per
    # item if the sizes count the whole corpus; 0.58 / 0.42 * 170k / 800 = 293 and 0.37 / 0.63 * 270k / 800 = 198
    assert "have 58 % and 37 % contaminants" in words
    assert "average about 123 and 125 tokens" in words and "about 293 and 198 if they count the background" in words
    assert "sized to that first share" not in words


@pytest.mark.parametrize(
    ("target", "n", "k"),
    [(0.05, 32, 1), (0.05, 200, 9), (0.05, 8, 0), (0.05, 40, 1), (0.05, 41, 2), (0.01, 32, 0), (0.01, 100, 0)]
    + [(0.01, 101, 1), (0.01, 200, 1), (0.05, 500, 24), (0.01, 500, 4)],
)
def test_reachable_fpr_is_what_the_authors_rule_reads(target, n, k) -> None:
    """k false positives (FPR k / n) under 'the last threshold whose FPR is strictly below the target': checked
    against metrics.tpr_at_fpr on distinct scores, where the TPR is the share of members above the (k+1)-th highest
    non-member."""
    from repro import metrics

    assert K.reachable_fpr(target, n) == (k, pytest.approx(k / n))
    rng = np.random.default_rng(n)
    for _ in range(5):
        members, nonmembers = rng.normal(1, 1, 16), rng.normal(0, 1, n)
        labels = np.r_[np.ones(16, int), np.zeros(n, int)]
        direct = float(np.mean(members > np.sort(nonmembers)[::-1][k]))
        assert metrics.tpr_at_fpr(labels, np.r_[members, nonmembers], target) == pytest.approx(direct)


def test_the_tpr_rows_are_labelled_by_the_fpr_their_nonmembers_reach() -> None:
    rows = {p: register(p) for p in ("smoke", "default", "paper")}
    d = rows["default"]
    assert "TPR@3.1% FPR" in d["tpr_vs_ppl"].claim and "32 non-members" in d["tpr_vs_ppl"].claim
    assert d["tpr_vs_zlib"].rule.what.startswith("mean TPR at 3.1 % FPR (1 false positive in 32 non-members)")
    assert "9 false positives in 200 non-members" in d["tpr_vs_ppl"].source  # the paper's own reading: 4.5 %
    assert d["tpr1_vs_ppl"].claim.startswith("Min-K% outperforms PPL at TPR@0% FPR")
    assert "no false positive in 32 non-members" in d["tpr1_vs_ppl"].rule.what
    p = rows["paper"]
    assert "TPR@4.5% FPR" in p["tpr_vs_ppl"].claim and "1 false positive in 200" in p["tpr1_vs_ppl"].rule.what
    assert "no false positive in 8 non-members" in rows["smoke"]["tpr_vs_ppl"].rule.what
    for r in rows.values():  # the relabelled rule still holds on Table 7's numbers
        assert all(r[k].on_paper_numbers() == "held" for k in ("tpr_vs_ppl", "tpr_vs_zlib", "tpr_vs_lowercase"))


def test_tpr_fpr_words_read_the_splits() -> None:
    from types import SimpleNamespace

    splits = [C.MemberSplit(s, ["m"] * 16, ["n"] * 32) for s in ("a", "b")]
    words = ex.tpr_fpr_words(SimpleNamespace(splits=splits))
    assert "200 non-members per set allow 9 false positives under it (4.5 % FPR)" in words
    assert "ours read it at 3.1 % FPR (1 false positive in 32 non-members)" in words
    assert "read at 0 % FPR (no false positive in 32 non-members): no false positive" in words
    uneven = [*splits, C.MemberSplit("c", ["m"] * 16, ["n"] * 283)]
    words = ex.tpr_fpr_words(SimpleNamespace(splits=uneven))
    assert "3.1 % FPR (1 false positive in 32 non-members); 4.9 % FPR (14 false positives in 283" in words
    assert ex.reached_fpr(uneven, 0.01) == (
        "0 % FPR (no false positive in 32 non-members); 0.71 % FPR (2 false positives in 283 non-members)"
    )


def test_nonmember_cost_words_on_a_worked_example() -> None:
    from types import SimpleNamespace

    datasets = pd.DataFrame(
        {"items": [2290, 299], "members": [16, 16], "non-members": [32, 32], "mean tokens": [60.0, 300.0]}
    )
    throughput = pd.DataFrame({"what": ["scoring with Min-K%++"], "tokens_per_second": [400.0]})
    p = SimpleNamespace(max_length=256, seeds=3, n_nonmembers=32)
    words = ex.nonmember_cost_words(datasets, throughput, p)
    # (500 - 32) x 60 + (299 - 16 - 32) x 256 (the second set capped at its items, its length at max_length)
    assert "would add 92,336 tokens per scoring pass" in words
    assert (
        "about 23 minutes at the throughput benchmark's 400 tokens per second" in words
    )  # 2 x 3 x 92,336 / 400 = 1,385 s
    assert "allow 24 and 4 false positives" in words and "under the 3 main runs" in words
    assert ex.nonmember_cost_words(datasets.assign(**{"non-members": [500, 283]}), throughput, p) == ""
    one = ex.nonmember_cost_words(datasets.iloc[:1], throughput.assign(tokens_per_second=1613.0), p)
    assert "about 104 s at the throughput benchmark's 1613 tokens per second" in one  # 2 x 3 x 28,080 / 1,613 = 104.5 s


def test_corpus_sizes_count_the_background_or_the_whole_corpus() -> None:
    from repro.mink import experiment as ex
    from repro.params import ParameterError

    assert ex.background_tokens(170_000, 64_000, "background", "size_background") == 170_000
    # the paper's 0.17M point as a whole corpus: 64k contaminant tokens leave 106k of background (60 % contaminants
    # instead of 27 %)
    assert ex.background_tokens(170_000, 64_000, "corpus", "size_background") == 106_000
    with pytest.raises(ParameterError, match=r"parameter 'size_background': a 64,000-token corpus cannot hold its "):
        ex.background_tokens(64_000, 64_000, "corpus", "size_background")


def test_the_burn_in_does_not_move_when_a_run_background_grows() -> None:
    """The burn-in is the pool's last texts, disjoint from every run's background and from DC-PDD's reference, and
    the same when a size grows: a size change retrains that size's runs, not the burn-in every run starts from."""
    from transformers import AutoTokenizer

    from repro.mink import experiment as ex
    from repro.params import Resolved, resolve
    from repro.pretrained import smollm2_path

    tok = AutoTokenizer.from_pretrained(smollm2_path())
    p = Resolved(resolve({"profile": "smoke"}, ex.SPEC))
    study = ex.prepare(p, str(smollm2_path()), tok, None)
    bigger = ex.prepare(Resolved({**p, "size_background": [200, 800]}), str(smollm2_path()), tok, None)
    assert study.burn_in_docs and study.burn_in_docs == bigger.burn_in_docs
    assert sum(map(study.n_tokens, study.burn_in_docs)) >= p.burn_in_tokens
    trained = {d for run in study.runs.values() for d in run.background}
    assert not trained & set(study.burn_in_docs)
    assert bigger.reference_texts < study.reference_texts  # the reference is what lies between: a larger size takes
    # its documents from the reference, not from the burn-in
