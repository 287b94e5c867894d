"""The conditional-LM OOD chapter's building blocks: MD/RMD, Kendall's τ, the abstention curve, ROUGE-L, the n-gram
overlap, and the embeddings (the template excluded, generation and teacher forcing agreeing)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from repro.clm_ood import clm, corpora
from repro.clm_ood import selective as sel


def test_md_and_rmd_match_the_direct_formula() -> None:
    rng = np.random.default_rng(0)
    fit, background, test = rng.normal(size=(200, 5)), rng.normal(1.0, 2.0, size=(150, 5)), rng.normal(size=(7, 5))
    md, rmd = sel.md_rmd(fit, background, test)

    def direct(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        mu = x.mean(0)
        inv = np.linalg.inv(np.cov(x, rowvar=False, bias=True))  # the 1/N covariance
        return np.array([(v - mu) @ inv @ (v - mu) for v in z])

    np.testing.assert_allclose(md, direct(fit, test), rtol=1e-9)
    np.testing.assert_allclose(rmd, direct(fit, test) - direct(background, test), rtol=1e-8, atol=1e-9)


def test_rmd_is_zero_when_the_background_is_the_fit_set() -> None:
    x = np.random.default_rng(1).normal(size=(50, 3))
    assert np.abs(sel.md_rmd(x, x, x[:5])[1]).max() < 1e-9


@pytest.mark.parametrize("ties", [False, True])
def test_kendall_tau_matches_scipy(ties: bool) -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=60), rng.normal(size=60)
    if ties:
        a, b = np.round(a), np.round(b * 2) / 2
    assert sel.kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic, abs=1e-12)
    assert sel.quality_tau(a, b) == pytest.approx(-kendalltau(a, b).statistic, abs=1e-12)


def test_kendall_tau_by_hand() -> None:
    # pairs (1,1)(2,3)(3,2): concordant 2, discordant 1 -> (2 - 1) / 3
    assert sel.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert np.isnan(sel.kendall_tau([1, 2, 3], [0, 0, 0]))  # as scipy: undefined with one side constant
    assert sel.quality_tau([1, 2, 3], [0, 0, 0]) == 0.0  # an abstention score gains nothing on equal qualities


def test_abstention_curve_worked_example() -> None:
    score = np.array([0.1, 0.9, 0.5, 0.3])
    quality = np.array([1.0, 0.0, 0.4, 0.8])
    curve = sel.abstention_curve(score, quality, (0.0, 0.25, 0.5, 0.75))
    # keep all: 2.2 / 4; drop 0.9: (1 + 0.4 + 0.8) / 3; drop 0.9 and 0.5: 1.8 / 2; keep only 0.1: 1.0
    np.testing.assert_allclose(curve, [0.55, 2.2 / 3, 0.9, 1.0])
    assert sel.curve_area(score, quality, (0.0, 0.25, 0.5, 0.75)) == pytest.approx((0.55 + 2.2 / 3 + 0.9 + 1.0) / 4)
    assert sel.abstention_curve(-score, quality, (0.75,))[0] == 0.0  # the reversed score keeps the worst output


def test_combination_averages_percentile_ranks() -> None:
    np.testing.assert_allclose(sel.combine([3.0, 1.0, 2.0], [10.0, 30.0, 20.0]), [2 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(sel.combine([1.0, 2.0], [1.0, 2.0]), [0.5, 1.0])


def test_rouge_l_on_a_pair_by_hand() -> None:
    from rouge_score import rouge_scorer

    from repro.clm_ood.experiment import rouge_l

    ref, pred = "the cat sat on the mat", "the cat lay on the mat"
    # longest common subsequence "the cat on the mat": 5 of 6 tokens on both sides, so P = R = F1 = 5/6
    assert rouge_l([pred], [ref])[0] == pytest.approx(5 / 6)
    package = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(ref, pred)["rougeL"].fmeasure
    assert rouge_l([pred], [ref])[0] == package


def test_jaccard_by_hand() -> None:
    assert corpora.jaccard(["A b c"], ["b c d"], 1) == pytest.approx(2 / 4)
    assert corpora.jaccard(["a b c"], ["b c d"], 2) == pytest.approx(1 / 3)
    assert corpora.jaccard(["a b"], ["c d"], 1) == 0.0


class _ToyLM:
    """A 'model' whose final state at each position is a fixed vector of the token read there (no context), and
    whose next-token distribution is uniform: embeddings become plain means of token vectors."""

    def __init__(self, vocab: int, dim: int = 4) -> None:
        self.table = np.random.default_rng(3).normal(size=(vocab, dim))
        self.config = SimpleNamespace(is_encoder_decoder=False)
        self.vocab = vocab

        self.model = self._final_states  # the decoder's final states, as LlamaForCausalLM.model gives them

    def _final_states(self, input_ids, attention_mask):
        import torch

        return SimpleNamespace(last_hidden_state=torch.tensor(self.table[input_ids.numpy()]))

    def lm_head(self, states):
        import torch

        return torch.zeros(*states.shape[:-1], self.vocab)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from repro.pretrained import smollm2_path

    return AutoTokenizer.from_pretrained(smollm2_path())


def test_the_template_is_left_out_of_the_input_embedding(tokenizer) -> None:
    articles = ["The council approved the new bridge.", "Rain is expected across the north on Monday evening."]
    model = _ToyLM(len(tokenizer))
    tmpl = clm.template(tokenizer, seq2seq=False)
    assert len(tmpl.prefix) > 5 and len(tmpl.suffix) > 2  # the chat template's turns around the article
    summaries = [[tokenizer.eos_token_id], tokenizer("A short one.", add_special_tokens=False)["input_ids"]]
    out = clm.teacher_forced(model, tokenizer, articles, summaries, budget=64)
    for i, article in enumerate(articles):
        ids = tokenizer(article, add_special_tokens=False)["input_ids"]
        np.testing.assert_allclose(out.input_emb[i], model.table[ids].mean(0), rtol=1e-12)
        with_template = model.table[[*tmpl.prefix, *ids, *tmpl.suffix]].mean(0)
        assert np.abs(out.input_emb[i] - with_template).max() > 1e-3
        np.testing.assert_allclose(out.output_emb[i], model.table[summaries[i]].mean(0), rtol=1e-12)
        np.testing.assert_allclose(out.logprobs[i], -np.log(len(tokenizer)), rtol=1e-12)
    cut = clm.teacher_forced(model, tokenizer, articles[1:], summaries[1:], budget=3)
    ids = tokenizer(articles[1], add_special_tokens=False)["input_ids"][:3]
    np.testing.assert_allclose(cut.input_emb[0], model.table[ids].mean(0), rtol=1e-12)


def test_generation_and_teacher_forcing_give_the_same_embeddings(tokenizer) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from repro.pretrained import smollm2_path, truncated_copy

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(truncated_copy(smollm2_path(), 2), dtype=torch.float32).eval()
    articles = [
        "The council approved the new bridge after years of delay, and work starts in spring.",
        "Rain is expected.",
        "Scientists found a new species of frog in the rainforest of Peru this week.",
    ]
    gen = clm.generate(model, tokenizer, articles, budget=24, max_new=6, batch_size=2)
    forced = clm.teacher_forced(model, tokenizer, articles, gen.token_ids, budget=24, batch_size=3)
    assert all(1 <= len(t) <= 6 for t in gen.token_ids)
    np.testing.assert_allclose(gen.input_emb, forced.input_emb, atol=1e-4)
    np.testing.assert_allclose(gen.output_emb, forced.output_emb, atol=1e-4)
    for a, b in zip(gen.logprobs, forced.logprobs):
        np.testing.assert_allclose(a, b, atol=1e-4)
    assert np.all(gen.perplexity >= 1.0) and np.allclose(np.log(gen.perplexity), -gen.mean_logprob)


def test_outputs_round_trip(tmp_path) -> None:
    out = clm.Outputs(
        ["a", "bb"],
        [np.array([1, 2]), np.array([3])],
        np.ones((2, 3)),
        np.zeros((2, 3)),
        [np.array([-1.0, -2.0]), np.array([-0.5])],
    )
    path = tmp_path / "o.npz"
    out.save(path)
    back = clm.Outputs.load(path)
    assert back.texts == ["a", "bb"] and [t.tolist() for t in back.token_ids] == [[1, 2], [3]]
    np.testing.assert_allclose(back.perplexity, np.exp([1.5, 0.5]))


def test_smoke_split_is_disjoint_and_the_background_shares_no_test_domain() -> None:
    from repro.clm_ood import experiment as ex
    from repro.params import Resolved, resolve

    p = Resolved(resolve({"profile": "smoke"}, ex.SPEC))
    s = ex.split(p)
    tests = {d.text for docs in s.test_sets.values() for d in docs}
    assert len(s.fit) == p.n_fit == len(s.background) == p.n_background and len(s.test_in) == p.n_test
    assert not tests & {d.text for d in s.fit} and not tests & {d.text for d in s.background}
    assert all(len(docs) == p.n_ood for docs in s.ood.values())
    assert all(d.reference for d in s.fit)
    # the background comes from its own BIG-bench tasks, round-robin, and no text of any local set is in it
    sources = [d.id.rsplit("-", 1)[0] for d in s.background]
    assert sources[: len(corpora.LOCAL_BACKGROUND)] == list(corpora.LOCAL_BACKGROUND)
    every_set = {d.text for name in (*corpora.LOCAL_SETS, corpora.IN_DOMAIN) for d in corpora.load(name)}
    assert not every_set & {d.text for d in corpora.background(300, 0)}
    assert all(len(d.text) >= corpora.BACKGROUND_CHARS for d in s.background)


def test_the_near_set_draws_n_near_and_its_first_items_are_the_n_ood_draw() -> None:
    from repro.clm_ood import experiment as ex
    from repro.params import Resolved, resolve

    p = Resolved(resolve({"profile": "smoke"}, ex.SPEC))
    small, large = ex.split(p), ex.split(Resolved({**p, "n_near": 20}))
    assert len(small.ood["cnn_dm"]) == p.n_ood and len(large.ood["cnn_dm"]) == 20
    assert [d.id for d in large.ood["cnn_dm"][: p.n_ood]] == [d.id for d in small.ood["cnn_dm"]]
    assert all(len(large.ood[s]) == p.n_ood for s in ("wikihow", "mlsum_de"))


def test_a_set_of_the_other_source_is_refused_in_one_line() -> None:
    from repro.clm_ood import experiment as ex

    message = ex.check({"source": "local", "ood_sets": ["samsum"]})
    assert message == "ood_sets: samsum are not local sets; choose from " + ", ".join(corpora.LOCAL_SETS)
    assert ex.check({"source": "hub", "ood_sets": ["samsum"]}) is None


def test_sizes_beyond_the_files_are_refused_naming_the_parameter() -> None:
    from repro.clm_ood import experiment as ex
    from repro.params import resolve

    p = resolve({"profile": "smoke"}, ex.SPEC)
    assert ex.check_sizes(p) is None
    assert (
        ex.check_sizes({**p, "n_fit": 1300, "n_test": 100, "n_background": 1300})
        == "n_fit + n_test + tune_pairs: 1300 + 100 + 8 exceeds the 1371 XSUM articles"
    )
    assert ex.check_sizes({**p, "n_ood": 151}) == "n_ood: 151 exceeds the 150 documents of cnn_dm"
    assert ex.check_sizes({**p, "n_near": 151}) == "n_near: 151 exceeds the 150 documents of cnn_dm"
    big = {**p, "n_fit": 1200, "n_test": 100, "n_background": 1200}
    assert ex.check_sizes(big) == "n_background: 1200 exceeds the 1009 documents of the background's BIG-bench tasks"
    assert ex.check({**p, "n_background": 30}) == (
        "n_background: 30 differs from n_fit 24; both Gaussians are fitted on as many embeddings (the authors' "
        "pseudo-code)"
    )


def test_a_local_set_is_parsed_once_until_its_files_change(tmp_path, monkeypatch) -> None:
    import json

    from repro import data

    task = tmp_path / "topical_chat" / "task.json"
    task.parent.mkdir()

    def write(*texts: str) -> None:
        task.write_text(json.dumps({"examples": [{"comment": f"c{i}", "input": t} for i, t in enumerate(texts)]}))

    monkeypatch.setattr(data, "bigbench_dir", lambda: tmp_path)
    write("Hello  there.", "A second   chat.")
    first = corpora.load("topical_chat")
    assert [d.text for d in first] == ["Hello there.", "A second chat."]
    first.clear()  # a caller's list is its own: the kept set is unchanged
    hits = corpora._parsed.cache_info().hits
    assert [d.text for d in corpora.load("topical_chat")] == ["Hello there.", "A second chat."]
    assert corpora._parsed.cache_info().hits == hits + 1
    write("Only one, now longer.")  # another size: read again
    assert [d.text for d in corpora.load("topical_chat")] == ["Only one, now longer."]


def test_items_that_share_a_source_document_carry_it() -> None:
    """Paragraphs of one Wikipedia or NYT article and turns of one SGD dialogue name their source; every other set's
    item is a document of its own."""
    for name in corpora.CLUSTERED:
        docs = corpora.load(name)
        assert all(d.source for d in docs) and len({d.unit for d in docs}) < len(docs), name
    for name in ("cnn_dm", "wikihow", "amazon_reviews", "reddit", "mlsum_de"):
        docs = corpora.load(name)
        assert all(d.source == "" for d in docs) and len({d.unit for d in docs}) == len(docs), name


def test_weighted_auroc_is_the_auroc_of_the_repeated_items() -> None:
    from repro.clm_ood import experiment as ex
    from repro.metrics import auroc

    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, 40), np.round(rng.normal(size=40), 1)  # ties
    w = rng.integers(0, 3, (5, 40))
    got = ex.weighted_auroc(y, s, w)
    for row, value in zip(w, got):
        idx = np.repeat(np.arange(40), row)
        assert value == pytest.approx(auroc(y[idx], s[idx]))


def _frame(shifts: dict[str, float], per_set: int = 20, article: int = 0) -> pd.DataFrame:
    """Synthetic scored items: three times `per_set` in-domain inputs, `per_set` per OOD set shifted by its value;
    with `article`, that many OOD inputs share one source document."""
    rng = np.random.default_rng(1)
    rows = []
    for name, shift in {corpora.IN_DOMAIN: 0.0, **shifts}.items():
        for i in range(per_set * (3 if name == corpora.IN_DOMAIN else 1)):
            unit = f"{name}:a{i // article}" if article and name != corpora.IN_DOMAIN else f"{name}:#{i}"
            ood = int(name != corpora.IN_DOMAIN)
            rows.append(
                {"set": name, "ood": ood, "unit": unit, "a": rng.normal() + shift, "b": rng.normal() + shift / 2}
            )
    return pd.DataFrame(rows)


def test_the_ladder_resamples_the_sets_and_names_them() -> None:
    from repro.clm_ood import experiment as ex

    frame = _frame({"s1": 0.2, "s2": 0.6, "s3": 1.0, "s4": 1.4, "s5": 1.8, "s6": 2.2})
    overlap = pd.DataFrame({"set": frame["set"].unique(), "jaccard_1": np.linspace(0.6, 0.1, 7)})
    ci = ex.ladder(frame, overlap, "a", n_boot=200, seed=0)
    assert ci.estimate < -0.8 and -1 <= ci.low <= ci.high < 0  # a clear ladder: ρ near -1, the interval below 0
    assert ci.method.startswith("Spearman ρ over 6 OOD sets, the sets resampled")


def test_a_clustered_auroc_difference_resamples_the_source_documents() -> None:
    from repro.clm_ood import experiment as ex

    frame = _frame({"s1": 1.0}, per_set=40, article=8)  # 40 OOD inputs from 5 source documents
    plain = ex.auroc_diff(frame, ["s1"], "a", "b")
    clustered = ex.auroc_diff(frame, ["s1"], "a", "b", "source documents", n_boot=300, seed=0)
    assert clustered.estimate == pytest.approx(plain.estimate)
    assert "125 source documents resampled" in clustered.method  # 120 in-domain inputs and 5 documents


def test_the_floor_scores_each_summary_against_another_reference_of_its_set() -> None:
    from repro.clm_ood import experiment as ex

    groups = np.array(["a", "a", "b", "a", "b", "c", "a"])
    other = ex.shuffled(groups, 3)
    assert (groups[other] == groups).all()  # the same set
    moved = groups != "c"
    assert (other[moved] != np.arange(groups.size)[moved]).all() and other[~moved].tolist() == [5]  # c is alone
    assert sorted(other.tolist()) == list(range(groups.size))  # a permutation: every reference used once


def test_perplexity_tau_fall_by_hand() -> None:
    """Low OOD half: perplexity orders quality perfectly (τ = 1); high half: backwards (τ = −1): the fall is 2."""
    from repro.clm_ood import experiment as ex

    frame = pd.DataFrame(
        {
            "set": ["xsum"] * 4 + ["cnn_dm"] * 4,
            "ood": [0] * 4 + [1] * 4,
            "rouge_l": [0.4, 0.3, 0.2, 0.1, 0.4, 0.3, 0.2, 0.1],
            "perplexity": [1.0, 2.0, 3.0, 4.0, 4.0, 3.0, 2.0, 1.0],
            "output_rmd": [0.0, 0.1, 0.2, 0.3, 1.0, 1.1, 1.2, 1.3],
        }
    )
    assert ex.tau_fall(frame, 50, 0).estimate == pytest.approx(2.0)
    bins = ex.tau_by_ood(frame, bins=2)
    assert bins["tau_perplexity"].tolist() == [1.0, -1.0] and bins["ood_share"].tolist() == [0.0, 1.0]


def test_quality_rows_leave_the_non_english_sets_out() -> None:
    from repro.clm_ood import experiment as ex

    frame = pd.DataFrame(
        {
            "set": ["xsum", "xsum", "cnn_dm", "mlsum_de", "nyt"],
            "ood": [0, 0, 1, 1, 1],
            "rouge_l": [0.3, 0.1, 0.1, 0.0, np.nan],
            "rouge_floor": [0.1, 0.1, 0.05, 0.0, np.nan],
            "similarity": [0.5, 0.5, 0.4, 0.2, np.nan],
            "similarity_floor": [0.2, 0.2, 0.1, 0.1, np.nan],
        }
    )
    assert ex.with_quality(frame)["set"].tolist() == ["xsum", "xsum", "cnn_dm"]
    # above the floor: XSUM (0.2 + 0.0) / 2 = 0.1, CNN/DM 0.05, MLSUM 0.0; each OOD set one weight
    assert ex.quality_drop(frame, 50, 0).estimate == pytest.approx(0.1 - 0.05)
    assert ex.quality_drop(frame, 50, 0, english=False).estimate == pytest.approx(0.1 - (0.05 + 0.0) / 2)
    many = pd.concat([frame, frame[frame["set"] == "mlsum_de"].assign(set="wikihow")] * 1, ignore_index=True)
    many = pd.concat([many, *[many[many["set"] == "wikihow"]] * 5], ignore_index=True)  # wikihow: 6 items, cnn_dm 1
    assert ex.quality_drop(many, 50, 0).estimate == pytest.approx(0.1 - (0.05 + 0.0) / 2)
    table = ex.quality_table(frame).set_index("set")
    assert table.loc["xsum", "rouge_l"] == pytest.approx(0.2) and table.loc["xsum", "n"] == 2
    assert not table.loc["mlsum_de", "english"] and table.loc["cnn_dm", "english"]


def test_the_background_check_refits_on_equal_sizes_and_leaves_the_tested_set_out() -> None:
    """With every test set's embeddings drawn from one Gaussian and a background equal to the fit set, RMD is zero,
    so its AUROC is one half; the mix leaves out the tested set (m counts the other sets' inputs)."""
    from repro.clm_ood import experiment as ex

    rng = np.random.default_rng(0)

    def outs(n: int) -> clm.Outputs:
        emb = rng.normal(size=(n, 3))
        return clm.Outputs(["x"] * n, [np.zeros(1)] * n, emb, emb.copy(), [np.zeros(1)] * n)

    fit = outs(40)
    r = SimpleNamespace(fit=fit, fit_generated=fit, background=fit, tests={"xsum": outs(20)})
    ood = {name: [None] * 10 for name in ("cnn_dm", "wikihow", "mlsum_de")}
    for name in ood:
        r.tests[name] = outs(10)
    table = ex.background_table(SimpleNamespace(covariance="ml", seed=0), SimpleNamespace(ood=ood), r)
    assert table["set"].tolist() == ["cnn_dm", "wikihow"] and table["m"].tolist() == [10, 10]
    assert table[["input_rmd_run", "output_rmd_run"]].eq(0.5).all().all()


def test_perplexity_densities_draw_one_legible_panel_per_ood_set() -> None:
    from repro import figure_checks as fc
    from repro.clm_ood import figures

    rng = np.random.default_rng(0)
    names = ["xsum", "cnn_dm", "nyt", "new_wiki", "reddit", "wikihow", "amazon_reviews"]
    frame = pd.DataFrame(
        {
            "set": np.repeat(names, 20),
            "ood": np.repeat([0] + [1] * (len(names) - 1), 20),
            "perplexity": np.exp(rng.normal(1.0, 0.3, 20 * len(names))),
        }
    )
    fig = figures.perplexity_densities(frame, {n: n.upper() for n in names})
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [n.upper() for n in names[1:]]
    assert fc.problems(fig) == []


def test_selective_pools_give_every_pool_and_the_length_baseline() -> None:
    from repro.clm_ood import experiment as ex

    rng = np.random.default_rng(0)
    n = 12
    frame = pd.DataFrame(
        {
            "set": ["xsum"] * n + ["cnn_dm"] * n + ["wikihow"] * n + ["mlsum_de"] * n,
            "ood": [0] * n + [1] * 3 * n,
            "summary": [" ".join(["w"] * k) for k in rng.integers(3, 20, 4 * n)],
            "rouge_l": rng.random(4 * n),
            "output_rmd+ppl": rng.random(4 * n),
            "output_rmd": rng.random(4 * n),
            "perplexity": rng.random(4 * n),
        }
    )
    table = ex.selective_pools(frame).set_index("pool")
    assert list(table.index) == ["all English sets", "XSUM + CNN/DailyMail", "XSUM + WikiHow"]
    assert table.loc["all English sets", "outputs"] == 3 * n  # MLSUM left out
    q = frame[frame["set"].isin(["xsum", "wikihow"])]
    length = -q["summary"].str.split().str.len().to_numpy()
    expected = sel.quality_tau(length, q["rouge_l"].to_numpy())
    assert table.loc["XSUM + WikiHow", "length (shorter first)"] == pytest.approx(expected)
