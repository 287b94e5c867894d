"""Data selection: bad values refused by `--prepare-only` in one line (exit 2) before any tokenizer or training, and
the pure pieces of the third pass (chunks, the target split, the pool check, equal n-gram sets, DoReMi's unequal
training shares, the KL-quality correlation across method means)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from conftest import error_lines
from repro.data_selection import dsir
from repro.data_selection import experiment as ex
from repro.runner import main


@pytest.mark.parametrize(
    "args, needle",
    [
        (["-p", "min_length", "1000"], "parameter 'min_length': 1000 leaves no selectable chunk in the pool of"),
        (["-p", "select_sizes", "[3000]"], "parameter 'select_sizes': 3000 is more than half of the"),
        (["-p", "select_sizes", "[2500]"], "parameter 'select_sizes': 2500 exceeds the"),
        (["-p", "eval_every", "400"], "parameter 'eval_every': 400 leaves 1 evaluation(s) in doremi_steps 400"),
        (["-p", "doremi_fractions", "[1,1]"], "parameter 'doremi_fractions': 2 values for 4 domains"),
        (["-p", "doremi_fractions", "[1,1,0,1]"], "parameter 'doremi_fractions': [1.0, 1.0, 0.0, 1.0] must be above 0"),
        (["-p", "main_dim", "130"], "parameter 'main_dim': 130 is not a multiple of the 4 attention heads"),
        (["-p", "main_dim", "32"], "parameter 'main_dim': 32 is narrower than the proxy's lm_dim 64"),
    ],
)
def test_bad_values_are_refused_by_prepare_only_in_one_line(
    args: list[str], needle: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setenv("REPRO_RUNS", str(tmp_path))
    capsys.readouterr()
    code = main(["run", "data_selection", "--profile", "default", "--prepare-only", *args])
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err


def test_default_values_pass_prepare_only(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("REPRO_RUNS", str(tmp_path))
    assert main(["run", "data_selection", "--profile", "default", "--prepare-only"]) == 0, capsys.readouterr().err


def test_chunks_cut_every_document_into_whole_words() -> None:
    docs = [" ".join(f"w{i}" for i in range(300)), "short one", ""]
    chunks, owner = ex.chunk_documents(docs, 128)
    assert [len(c.split()) for c in chunks] == [128, 128, 44, 2, 0]
    assert owner.tolist() == [0, 0, 0, 1, 2]
    assert " ".join(chunks[:3]) == docs[0]


def test_target_split_keeps_each_documents_chunks_together() -> None:
    doc_ids = np.repeat(np.arange(10), [1, 2, 3, 1, 1, 2, 1, 1, 2, 1])
    p = {"seed": 0, "target_docs": 4, "eval_docs": 3}
    sample, held, rest = ex.split_documents(doc_ids, p)
    parts = [set(doc_ids[x].tolist()) for x in (sample, held, rest)]
    assert [len(x) for x in parts] == [4, 3, 3]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert sorted(sample + held + rest) == list(range(doc_ids.size))  # every chunk in exactly one part
    order = np.random.default_rng(0).permutation(10)
    assert parts[0] == set(order[:4].tolist()) and parts[1] == set(order[4:7].tolist())


def test_target_split_shares_no_article_between_its_parts() -> None:
    # 12 documents in 5 articles (sizes 4, 1, 3, 2, 2); each document 1 or 2 chunks
    doc_ids = np.repeat(np.arange(12), [1, 2, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1])
    article_of_doc = np.array([0, 0, 0, 0, 1, 2, 2, 2, 3, 3, 4, 4])
    articles = article_of_doc[doc_ids]
    p = {"seed": 3, "target_docs": 5, "eval_docs": 3}
    parts = ex.split_documents(doc_ids, p, articles)
    assert sorted(parts[0] + parts[1] + parts[2]) == list(range(doc_ids.size))  # every chunk in exactly one part
    arts = [set(articles[x].tolist()) for x in parts]
    assert not (arts[0] & arts[1] or arts[0] & arts[2] or arts[1] & arts[2])
    # whole articles in the seeded order until each part holds its documents
    order = np.random.default_rng(3).permutation(5)
    sizes = np.bincount(article_of_doc)[order]
    before = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    assert arts[0] == set(order[before < 5].tolist())
    assert arts[1] == set(order[(before >= 5) & (before < 8)].tolist())
    # each part holds at least its documents (whole articles), the sample at most an article's worth beyond
    n_docs = [len(set(doc_ids[x].tolist())) for x in parts]
    assert 5 <= n_docs[0] < 5 + 4 and n_docs[1] >= 3


def test_default_target_split_shares_no_squad_shifts_article() -> None:
    p = {k: v.default for k, v in ex.SPEC.items()}
    for i, name in enumerate(p["domains"]):
        if name not in p["targets"]:
            continue
        docs, owner = ex._local_docs(name, p["docs_per_domain"], p["seed"] + i)
        _, doc_ids = ex.chunk_documents(docs, p["chunk_words"])
        articles = owner[doc_ids]
        sample, held, rest = ex.split_documents(doc_ids, p, articles)
        fitted, scored, oracle = (set(articles[x].tolist()) for x in (sample, held, rest))
        assert held and not (scored & fitted) and not (scored & oracle) and not (fitted & oracle), name
        assert (
            len(set(doc_ids[sample].tolist())) >= p["target_docs"]
            and len(set(doc_ids[held].tolist())) >= p["eval_docs"]
        )


def test_pool_problem_names_each_degenerate_setting() -> None:
    long = " ".join(["word"] * 50)
    texts = {"a": [long] * 20, "b": [long] * 6 + ["tiny"] * 4}
    doc_ids = {"a": np.arange(20), "b": np.arange(10)}
    p = {"seed": 0, "target_docs": 5, "eval_docs": 5, "chunk_words": 128, "min_length": 10, "select_sizes": [3]}
    assert ex.pool_problem(texts, doc_ids, p, "a") is None  # 6 eligible pool chunks of b, 15 oracle chunks of a
    assert "leaves no selectable chunk" in ex.pool_problem(texts, doc_ids, p | {"min_length": 51}, "a")
    assert "more than half of the 6 pool chunks" in ex.pool_problem(texts, doc_ids, p | {"select_sizes": [4]}, "a")
    few = p | {"eval_docs": 6, "select_sizes": [7]}  # b keeps 4 documents outside the held-out six, at most 6 eligible
    assert "left for the oracle arm" in ex.pool_problem(texts, doc_ids, few, "b")
    assert ex.pool_problem(texts, doc_ids, few | {"select_sizes": [1]}, "b") is None


def test_contamination_sets_are_cut_to_equal_ngram_counts() -> None:
    rng = np.random.default_rng(0)
    sets = {"big": [f"item {i} has some words here" for i in range(40)], "small": ["two words", "three more words"]}
    out = ex.equal_ngrams(sets, rng)
    n = {k: int(dsir.ngram_features(v).sum()) for k, v in out.items()}
    assert out["small"] == sets["small"] and n["small"] == 3 + 5
    assert n["small"] <= n["big"] < n["small"] + 11  # the shortest prefix reaching the smallest set's count


def test_kl_correlation_is_pearson_on_method_means_with_a_fisher_interval() -> None:

    methods = ["m1", "m2", "m3", "m4", "m5", "m6"]
    kl = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    ppl = np.exp(-np.array([1.0, 1.3, 1.2, 1.6, 1.5, 2.0]))
    rows = [
        {"target": "t", "method": m, "seed": s, "kl_reduction": k + d, "perplexity": q}
        for m, k, q in zip(methods, kl, ppl)
        for s, d in ((0, -0.01), (1, 0.01))  # draws average out to the method's value
    ]
    iv = ex.kl_quality_correlation(pd.DataFrame(rows))
    r = float(np.corrcoef(kl, -np.log(ppl))[0, 1])
    half = 1.959964 / math.sqrt(6 - 3)
    assert iv.estimate == pytest.approx(r)
    assert (iv.low, iv.high) == pytest.approx((math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)))
    assert "methods" in iv.method


def test_doremi_chunks_hold_out_the_last_sixteenth_and_keep_a_fraction_of_the_rest() -> None:
    d = ex.Domains(["a"], {"a": []}, {"a": []}, 8, 0, doc_ids={"a": np.repeat(np.arange(32), 2)})
    train, held = ex.doremi_chunks(d, "a", 0.5)
    assert held.tolist() == list(range(60, 64))  # documents 30 and 31 (32 // 16 = 2)
    assert train.tolist() == list(range(30))  # the first 15 of the 30 training documents
    assert ex.doremi_chunks(d, "a", 1e-3)[0].tolist() == [0, 1]  # at least one document


def test_unigram_perplexity_is_the_add_one_frequency_model_on_the_predicted_tokens() -> None:
    train = np.array([1, 1, 2])
    blocks = np.array([[0, 1, 2], [3, 1, 3]])
    p = np.array([1, 3, 2, 1]) / 7  # (counts + 1) / (3 + 4)
    direct = math.exp(-np.mean(np.log([p[1], p[2], p[1], p[3]])))  # every block's tokens after its first
    assert ex.unigram_perplexity(train, blocks, 4) == pytest.approx(direct)


def test_targets_that_disagree_in_sign_replace_the_more_data_advice() -> None:

    from repro import stats as st
    from repro.data_selection.claims import claims

    table = pd.DataFrame(
        [
            ("Amazon", "random", 0.84, 0.80, 0.88),
            ("Reddit", "random", 0.99, 0.95, 1.03),
            ("Amazon", "heuristic classification", 0.918, 0.88, 0.96),
            ("Reddit", "heuristic classification", 1.039, 1.01, 1.07),
        ],
        columns=["target", "DSIR against", "ratio", "low", "high"],
    )
    assert ex.disagreement(table, "random") == ""
    split = ex.disagreement(table, "heuristic classification")
    assert split.startswith("the targets disagree in sign (Amazon 0.918 [0.880, 0.960], Reddit 1.039 [1.010, 1.070])")
    loose = table.assign(low=table.low - 0.05)  # Reddit's interval now holds 1: only the estimates disagree
    assert ex.disagreement(loose, "heuristic classification").startswith("the targets' estimates lie on opposite")
    p = {k: v.default for k, v in ex.SPEC.items()} | {"profile": "default"}
    iv = st.Interval(0.977, 0.951, 1.003, "bootstrap over held-out articles")
    held = st.Interval(0.91, 0.88, 0.95, "bootstrap over held-out articles")
    rows = ex.verdict_rows(claims(p), {"dsir_vs_heuristic": iv, "dsir_vs_random": held}, per_target=table)
    assert rows[0]["decision"] == "inconclusive" and rows[0]["why"].startswith(split + "; pooled, to decide")
    assert rows[1]["decision"] == "held" and rows[1]["why"] == ""


def test_rankings_count_the_chunks_the_gumbel_noise_could_move_across_the_cutoff() -> None:
    from scipy import sparse

    n = 20
    w = np.arange(n, dtype=float) * 2.0  # log weights 0, 2, ..., 38 nats
    t = ex.DsirTarget("x", [], [], [("p", i) for i in range(n)], w, np.zeros(n), eligible=np.ones(n, bool))
    t.package_log_weights, t.package_ratio, t.empty = w.copy(), np.zeros(3), np.array([False, False, True])
    feats = sparse.csr_matrix(np.c_[np.ones(n), np.arange(n) % 3, np.arange(n) % 2])
    r = ex.rankings(t, feats, 10 + np.arange(n) % 2, k=4)  # 42 tokens: the top 4 (11 + 10 + 11 + 10), cutoff 32
    assert r["log weight SD (nats)"] == pytest.approx(w.std())
    assert r["chunks within 1 Gumbel SD of the cutoff"] == 1  # only 32 itself: its neighbours are 2 nats away
    assert r["selected share of the eligible pool"] == pytest.approx(4 / n)
    ranks = pd.DataFrame([r, r | {"log weight SD (nats)": 40.0}])
    assert ex.gumbel_words(ranks).startswith(
        f"the log weights spread with a standard deviation of {w.std():.1f} to 40.0 nats against the Gumbel noise's 1.28"
    )


def test_pearson_is_nan_without_a_warning_when_one_side_is_constant() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(ex.pearson(np.zeros(5), np.arange(5)))  # no empty bucket: no unseen n-gram to count
    assert ex.pearson(np.arange(5), 2 * np.arange(5) + 1) == pytest.approx(1.0)
