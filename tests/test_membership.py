"""Min-K% chapter: detectors against direct formulas, corpus construction, continued pretraining and its cache."""

from __future__ import annotations

import math
import shutil
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from repro import cache, metrics
from repro.mink import corpora as C
from repro.mink import detectors, pretraining

KS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 1.0)


def padded(rows: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded values (pad = a huge number that must never be picked) and their mask."""
    width = max(map(len, rows))
    values = torch.full((len(rows), width), 1e9)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        values[i, : len(r)] = torch.as_tensor(r)
        mask[i, : len(r)] = True
    return values, mask


def test_lowest_k_mean_matches_min_k_prob_including_short_texts() -> None:
    rng = np.random.default_rng(0)
    # lengths 1-4 are shorter than 1/k tokens for most k: the authors' int(len*k) is 0 there, guarded to 1 token
    rows = [rng.normal(-3, 2, n).astype(np.float32) for n in (1, 2, 3, 4, 7, 10, 19, 20, 33, 100)]
    values, mask = padded(rows)
    got = detectors.lowest_k_mean(values, mask, KS).numpy()
    for j, k in enumerate(KS):
        for i, r in enumerate(rows):
            assert got[j, i] == pytest.approx(metrics.min_k_prob(r, k), abs=1e-5), (k, len(r))


def test_lowest_k_mean_worked_example() -> None:
    values, mask = padded([np.array([-1.0, -5.0, -2.0, -4.0, -3.0])])
    # k = 0.4 of 5 tokens -> the 2 lowest (-5, -4); k = 0.1 -> int(0.5) = 0 -> guarded to the single lowest
    assert detectors.lowest_k_mean(values, mask, [0.4, 0.1, 1.0]).flatten().tolist() == [-4.5, -5.0, -3.0]
    with pytest.raises(ValueError, match="k is a fraction"):
        detectors.lowest_k_mean(values, mask, [0.0])


def tiny_lm(vocab: int = 50) -> torch.nn.Module:
    """A random two-layer LLaMA small enough to score texts exactly, offline."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(cfg).eval()


def direct_stats(model: torch.nn.Module, ids: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token log-probs, mu and sigma of one unpadded sequence, in float64, by the textbook formulas."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    logp = torch.log_softmax(logits, -1)
    lp = logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = torch.sqrt((p * (logp - mu[:, None]) ** 2).sum(-1))
    return lp.numpy(), mu.numpy(), sigma.numpy()


def test_batch_scores_equal_per_text_formulas_with_padding() -> None:
    model = tiny_lm()
    rng = np.random.default_rng(1)
    seqs = [rng.integers(1, 50, n).tolist() for n in (2, 3, 6, 11, 17)]  # 1..16 scored tokens
    width = max(map(len, seqs))
    ids = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s)], mask[i, : len(s)] = torch.tensor(s), 1
    got = detectors.batch_scores(model, ids, mask, KS, plus=True)
    for i, s in enumerate(seqs):
        lp, mu, sigma = direct_stats(model, s)
        assert got["tokens"][i] == len(s) - 1
        assert got["loss"][i] == pytest.approx(-lp.mean(), abs=1e-4)
        for k in KS:
            assert got[f"mink_{k:g}"][i] == pytest.approx(metrics.min_k_prob(lp, k), abs=1e-4)
            assert got[f"minkpp_{k:g}"][i] == pytest.approx(metrics.min_k_plus_plus(lp, mu, sigma, k), abs=1e-5)


def test_detector_scores_are_the_authors_formulas_negated() -> None:
    texts = ["Q: What is the capital of France?\nA: Paris.", "Review: fine, fine, fine, fine, fine."]
    loss = np.array([2.0, 3.5])
    target = pd.DataFrame({"loss": loss, "mink_0.2": [-4.0, -6.0], "minkpp_0.2": [-1.0, -0.5]})
    lower = pd.DataFrame({"loss": [2.6, 3.0]})
    ref = pd.DataFrame({"loss": [2.5, 3.0]})
    s = detectors.detector_scores(
        target, texts, [0.2], lower=lower, refs={"Ref": ref}, neighbor_loss=np.array([2.2, 3.1])
    )
    # authors' code: lower score = member; ppl = exp(loss), zlib = log(ppl)/len(zlib), lowercase = -(log ppl_l / log ppl)
    ppl = np.exp(loss)
    authors = {
        "PPL": np.log(ppl),
        "Zlib": np.log(ppl) / np.array([len(zlib.compress(t.encode())) for t in texts]),
        "Lowercase": -(np.array([2.6, 3.0]) / np.log(ppl)),
        "Ref": loss - np.array([2.5, 3.0]),
        "Neighbor": loss - np.array([2.2, 3.1]),
        "Min-K% 0.2": np.array([4.0, 6.0]),
    }
    for name, value in authors.items():
        np.testing.assert_allclose(s[name], -value, err_msg=name)
    assert s["Min-K%++ 0.2"].tolist() == [-1.0, -0.5]


def test_evaluate_auc_and_tpr() -> None:
    labels = np.array([1, 1, 1, 0, 0, 0])
    table = detectors.evaluate({"PPL": np.array([3.0, 2.0, 0.5, 1.0, 0.0, -1.0]), "Min-K% 0.2": np.arange(6.0)}, labels)
    ppl = table.set_index("method").loc["PPL"]
    assert ppl.auc == pytest.approx(8 / 9) and math.isnan(ppl.k)
    assert ppl.tpr_at_5fpr == pytest.approx(2 / 3)  # two members above every non-member
    mk = table.set_index("method").loc["Min-K%"]
    assert mk.k == 0.2 and mk.auc == 0.0


WORDS = "the a cat dog sat ran on mat fast slow big small red".split()


def word_tokenizer(extra: dict[str, str] | None = None):
    """A word-level fast tokenizer over WORDS plus special tokens (pad, eos, optionally mask)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = {"pad_token": "<pad>", "eos_token": "<s>", "unk_token": "<unk>", **(extra or {})}
    vocab = {t: i for i, t in enumerate([*specials.values(), *WORDS])}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=raw, **specials), vocab


def test_token_scores_keep_input_order_and_match_batches_of_one() -> None:
    tok, vocab = word_tokenizer()
    model = tiny_lm(vocab=len(vocab))
    texts = ["the cat sat on the mat", "a dog ran", "the big red dog ran fast on a small mat", "cat sat"]
    batched = detectors.token_scores(model, tok, texts, batch_size=3).table(KS)
    single = detectors.token_scores(model, tok, texts, batch_size=1).table(KS)
    assert batched.index.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(batched.to_numpy(float), single.to_numpy(float), atol=1e-4)
    assert batched.tokens.tolist() == [5, 2, 9, 1]


def test_cut_scores_from_the_full_pass_equal_scoring_the_cut_texts() -> None:
    tok, vocab = word_tokenizer()
    model = tiny_lm(vocab=len(vocab))
    texts = ["the cat sat on the mat", "a dog ran", "the big red dog ran fast on a small mat", "cat sat"]
    cuts = [2, 4, 7]
    full = detectors.token_scores(model, tok, texts, plus=False, batch_size=3, max_length=12).table(KS, cuts=cuts)
    for c in cuts:
        alone = detectors.token_scores(model, tok, texts, plus=False, batch_size=2, max_length=c).table(KS)
        got = detectors.cut_scores(full, KS, c)
        np.testing.assert_allclose(got["PPL"], -alone["loss"], atol=1e-5)
        for k in KS:
            np.testing.assert_allclose(got[f"Min-K% {k:g}"], alone[f"mink_{k:g}"], atol=1e-5)
    assert full["loss@2"].to_numpy() == pytest.approx(-full["mink_0.05@2"].to_numpy())  # one scored token
    with pytest.raises(ValueError, match="at least 2 tokens"):
        detectors.token_scores(model, tok, texts, plus=False).table(KS, cuts=[1])


def test_token_scores_are_kept_by_model_identity_and_read_for_any_ks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    tok, vocab = word_tokenizer()
    model = tiny_lm(vocab=len(vocab))
    texts = ["the cat sat on the mat", "a dog ran", "the big red dog ran fast on a small mat", "cat sat", "a dog ran"]
    direct = detectors.token_scores(model, tok, list(dict.fromkeys(texts)), batch_size=2).table(KS)
    calls = []
    real = detectors.token_scores
    monkeypatch.setattr(detectors, "token_scores", lambda *a, **k: calls.append(1) or real(*a, **k))
    C.score_table(model, tok, texts, KS, batch_size=2)  # no identity: scored, nothing kept
    assert len(calls) == 1 and not (tmp_path / "mink").exists()
    cache.mark(model, "tiny", 0)
    first = C.score_table(model, tok, texts, KS, batch_size=2)
    again = C.score_table(model, tok, texts, [0.2], batch_size=2, cuts=[3])  # other ks and a cut: read back
    assert len(calls) == 2 and len(list((tmp_path / "mink").glob("tokens-*.npz"))) == 1
    np.testing.assert_array_equal(first.to_numpy(float), direct.to_numpy(float))
    np.testing.assert_array_equal(again["mink_0.2"].to_numpy(), direct["mink_0.2"].to_numpy())
    assert first.index.tolist() == list(dict.fromkeys(texts))
    C.score_table(model, tok, texts, KS, batch_size=3)  # another batch size is another entry
    cache.mark(model, "tiny", 1)  # another checkpoint
    C.score_table(model, tok, texts, KS, batch_size=2)
    assert len(calls) == 4


def test_dc_pdd_worked_example() -> None:
    # vocabulary of 4 ids; reference counts [5, 1, 0, 2] -> smoothed f = (c + 1) / (8 + 4) = [1/2, 1/6, 1/12, 1/4]
    freq = np.array([6, 2, 1, 3]) / 12
    ids = [[0, 1, 2, 1, 3]]  # scored tokens 1, 2, 1, 3: the repeated 1 counts once, at its first occurrence
    lp = [np.log(np.array([0.001, 0.002, 0.9, 0.5]))]
    terms = [min(0.001 * math.log(6), 0.01), min(0.002 * math.log(12), 0.01), min(0.5 * math.log(4), 0.01)]
    assert terms == pytest.approx([0.0017918, 0.0049698, 0.01], abs=1e-7)
    assert detectors.dc_pdd(lp, ids, freq)[0] == pytest.approx(np.mean(terms))
    assert detectors.dc_pdd(lp, ids, freq, cap=1.0)[0] == pytest.approx(
        np.mean([0.001 * math.log(6), 0.002 * math.log(12), 0.5 * math.log(4)])
    )
    with pytest.raises(ValueError, match="3 scored log-probabilities for 4 tokens"):
        detectors.dc_pdd([lp[0][:3]], ids, freq)


def test_token_frequencies_are_laplace_smoothed_counts() -> None:
    tok, vocab = word_tokenizer()
    freq = detectors.token_frequencies(tok, ["the cat sat", "the dog the end"], max_length=3)
    counts = np.zeros(len(vocab))
    for word in ["the", "cat", "sat", "the", "dog", "the"]:  # the second text cut to 3 tokens; 'end' is unknown anyway
        counts[vocab[word]] += 1
    np.testing.assert_allclose(freq, (counts + 1) / (6 + len(vocab)))
    assert freq.sum() == pytest.approx(1.0)


def test_score_table_dc_pdd_equals_the_formula_on_the_models_probabilities() -> None:
    tok, vocab = word_tokenizer()
    model = tiny_lm(vocab=len(vocab))
    texts = ["the cat sat on the mat", "a dog ran", "the big red dog ran fast on a small mat", "cat sat"]
    freq = detectors.token_frequencies(tok, ["the the the cat dog mat", "a small red mat"])
    table = C.score_table(model, tok, texts, KS, batch_size=3, freq=freq)
    for text in texts:
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            probs = model(input_ids=torch.tensor([ids])).logits[0].softmax(-1)
        seen, terms = set(), []
        for pos in range(1, len(ids)):  # token pos is predicted at pos - 1
            if ids[pos] not in seen:
                seen.add(ids[pos])
                terms.append(min(float(probs[pos - 1, ids[pos]]) * -math.log(freq[ids[pos]]), 0.01))
        assert table.loc[text, "dcpdd"] == pytest.approx(np.mean(terms), rel=1e-4), text
    s = detectors.detector_scores(table.loc[texts], texts, KS)
    np.testing.assert_array_equal(s["DC-PDD"], table.loc[texts, "dcpdd"].to_numpy())
    assert "DC-PDD" not in detectors.detector_scores(C.score_table(model, tok, texts, KS, batch_size=3), texts, KS)


def test_insert_blocks_keeps_every_document_and_background_order() -> None:
    background = [f"doc{i}" for i in range(20)]
    blocks = [f"item{i}" for i in range(7)] + ["item0"]  # a repeated item is a second, separate copy
    docs = C.insert_blocks(background, blocks, seed=3)
    assert sorted(docs) == sorted(background + blocks)
    assert [d for d in docs if d.startswith("doc")] == background
    assert docs == C.insert_blocks(background, blocks, seed=3)
    assert docs != C.insert_blocks(background, blocks, seed=4)


def test_member_split_copies_and_take_tokens() -> None:
    split = C.split_members("s", [f"t{i}" for i in range(30)] + ["t0"], 10, seed=0)
    assert len(split.members) == len(split.nonmembers) == 10
    assert not set(split.members) & set(split.nonmembers)
    assert split.labels.tolist() == [1] * 10 + [0] * 10
    with pytest.raises(ValueError, match="fewer than"):
        C.split_members("s", ["a", "b", "c"], 2, seed=0)
    copies = C.fixed_copies(16, (1, 2, 4), seed=0)
    assert sorted(np.bincount(copies).tolist()) == [0, 0, 5, 5, 6] and set(copies) == {1, 2, 4}  # 6 x1, 5 x2, 5 x4
    assert not np.array_equal(copies, C.fixed_copies(16, (1, 2, 4), seed=1))  # which member gets which: the seed's
    assert C.take_tokens(["aa", "bbb", "c", "dd"], 4, len) == ["aa", "bbb"]


def test_formats_and_trim_words() -> None:
    assert (
        C.format_yes_no(" Frost happens in December.", "Is frost common?", True)
        == "Frost happens in December.\nQuestion: Is frost common?\nAnswer: yes"
    )
    assert C.format_choice("Why?", ["a", "b"], "b") == "Question: Why?\nChoices: (A) a (B) b\nAnswer: b"
    assert C.trim_words("One two three. Four five six. Seven.", 6) == "One two three. Four five six."
    assert C.trim_words("one two three four five", 3) == "one two three"
    assert C.format_review("Great<br />phone.", 10) == "Review: Great phone."


def test_pack_blocks_keep_items_whole_in_corpus_order_and_mask_the_tail() -> None:
    class Tok:
        eos_token_id = 0

        def __call__(self, docs, add_special_tokens=False):
            return {"input_ids": [[len(d)] * len(d) for d in docs]}

    # "XY" (an inserted item, 3 tokens with EOS) would straddle blocks 1 and 2: it opens block 2 and the next
    # background document fills the gap; the last block is padded and masked, not wrapped to the start
    packed = pretraining.pack_blocks(Tok(), ["abcde", "XY", "fgh"], 4, keep_whole=["XY"])
    assert packed.ids.tolist() == [[5, 5, 5, 5], [5, 0, 3, 3], [2, 2, 0, 3], [0, 0, 0, 0]]
    assert packed.mask.tolist() == [[1] * 4, [1] * 4, [1] * 4, [1, 0, 0, 0]]
    assert packed.block_of == [0, 2, 1]
    assert int(packed.mask.sum()) == 6 + 3 + 4  # every token once: nothing trained twice, nothing dropped
    same = pretraining.pack_blocks(Tok(), ["abcde", "XY", "fgh"], 4)  # without whole items: the plain stream
    assert same.ids.tolist()[:3] == [[5, 5, 5, 5], [5, 0, 2, 2], [0, 3, 3, 3]] and same.block_of == [0, 1, 2]
    assert pretraining._Blocks(packed.ids, packed.mask)[3]["labels"].tolist() == [0, -100, -100, -100]
    with pytest.raises(ValueError, match="fewer than one block"):
        pretraining.pack_blocks(Tok(), ["a"], 4)


def large_files(folder: Path, limit: int = 20 * 2**20) -> list[Path]:
    """Files over `limit` bytes under `folder` (a test must not leave model-sized files in the temp directory)."""
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size > limit]


@pytest.mark.trains
def test_cached_pretraining_trains_stores_and_reloads(tmp_path, monkeypatch) -> None:
    from transformers import AutoTokenizer

    from repro.pretrained import smollm2_path

    tok = AutoTokenizer.from_pretrained(smollm2_path())  # before REPRO_DATA moves: no second 0.5 GB conversion
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    base = tmp_path / "tiny"
    model = tiny_lm(vocab=len(tok))
    model.save_pretrained(base)
    tok.save_pretrained(base)
    docs = ["The quick brown fox jumps over the lazy dog."] * 6
    cfg = pretraining.PretrainConfig(learning_rate=1e-2, block_size=16, batch_size=2, seed=0)
    trained, stats = pretraining.cached_pretraining("t", base, docs, cfg)
    per_doc = len(tok(docs[0], add_special_tokens=False)["input_ids"]) + 1  # + end of text
    assert not stats["cached"] and stats["train_tokens"] == 6 * per_doc  # every token once, none wrapped
    assert stats["steps"] == math.ceil(math.ceil(stats["train_tokens"] / 16) / 2)  # one epoch of 2-block batches
    assert stats["tokens_per_second"] > 0
    before = next(tiny_lm(vocab=len(tok)).parameters())
    assert not torch.equal(next(trained.parameters()), before)  # it trained
    again, stats2 = pretraining.cached_pretraining("t", base, docs, cfg)
    assert stats2["cached"] and stats2["train_loss"] == stats["train_loss"]
    # read back lazily: its cache identity at once (what kept scores are keyed by), its weights on first use
    assert not again.weights_read and cache.identity(again) == cache.identity(trained)
    for a, b in zip(trained.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    other = pretraining.checkpoint_dir("t", base, docs[:-1], cfg)
    assert other != pretraining.checkpoint_dir("t", base, docs, cfg) and not other.exists()
    _, unstored = pretraining.cached_pretraining("u", base, docs, cfg, store=False)
    assert not unstored["cached"] and not pretraining.checkpoint_dir("u", base, docs, cfg).exists()
    assert not large_files(tmp_path)


def test_neighbors_swap_exactly_one_word() -> None:
    from transformers import BertConfig, BertForMaskedLM

    tok, vocab = word_tokenizer({"mask_token": "<mask>"})
    torch.manual_seed(0)
    mlm = BertForMaskedLM(
        BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=32,
        )
    ).eval()
    texts = ["the cat sat on the mat", "a dog ran fast"]
    out = detectors.neighbors(texts, mlm, tok, n=3, seed=0, batch_size=4)
    assert [len(ns) for ns in out] == [3, 3]
    for text, ns in zip(texts, out):
        for n in ns:
            diff = [i for i, (a, b) in enumerate(zip(text.split(), n.split())) if a != b]
            assert len(n.split()) == len(text.split()) and len(diff) == 1, (text, n)


@pytest.mark.trains
def test_exported_corpus_trains_into_the_notebook_cache(tmp_path, monkeypatch) -> None:
    from transformers import AutoTokenizer

    from repro.pretrained import smollm2_path

    tok = AutoTokenizer.from_pretrained(smollm2_path())  # before REPRO_DATA moves: no second 0.5 GB conversion
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    base = tmp_path / "tiny"
    tiny_lm(vocab=len(tok)).save_pretrained(base)
    tok.save_pretrained(base)
    docs = ["A short document about cats.", "Another one, about dogs and their owners."] * 3
    cfg = pretraining.PretrainConfig(learning_rate=1e-3, block_size=8, batch_size=2, seed=1)
    command = pretraining.export_corpus("main", base, docs, cfg)
    assert command.startswith("accelerate launch -m repro.mink.pretraining ")
    assert pretraining.main(command.split()[4:]) == 0  # what `accelerate launch` would run on each process
    _, stats = pretraining.cached_pretraining("main", base, docs, cfg)
    assert stats["cached"] and stats["steps"] >= 1
    assert not large_files(tmp_path)


def test_next_token_stats_match_float64_on_a_49k_vocabulary() -> None:
    # random logits shaped like SmolLM2's (49,152 tokens), with a few peaked rows; right padding on two rows
    from repro.pretrained import next_token_stats

    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 9, 49_152, generator=gen) * 3.0
    logits[:, ::3, 7] += 25.0  # near-certain next tokens, where float32 moments are hardest
    ids = torch.randint(0, 49_152, (3, 9), generator=gen)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:], mask[2, 3:] = 0, 0
    lp, mu, sigma, m = next_token_stats(logits, ids, mask, plus=True, chunk=7)
    logp = torch.log_softmax(logits[:, :-1].double(), -1)
    p = logp.exp()
    want_mu = (p * logp).sum(-1)
    want_sigma = (p * (logp - want_mu[..., None]) ** 2).sum(-1).sqrt()
    want_lp = logp.gather(-1, ids[:, 1:, None])[..., 0]
    real = m.bool()
    assert m.sum().item() == 8 + 5 + 2
    assert torch.allclose(lp[real].double(), want_lp[real], atol=1e-5, rtol=0)
    assert torch.allclose(mu[real].double(), want_mu[real], atol=1e-5, rtol=0)
    assert torch.allclose(sigma[real].double(), want_sigma[real], atol=1e-5, rtol=0)
    assert (lp[~real] == 0).all() and (sigma[~real] == 1).all()  # padding stays neutral


def test_split_members_scores_more_nonmembers_and_keeps_the_members() -> None:
    texts = [f"t{i}" for i in range(40)]
    wide = C.split_members("s", texts, 10, seed=1, n_out=25)
    assert len(wide.members) == 10 and len(wide.nonmembers) == 25
    assert wide.members == C.split_members("s", texts, 10, seed=1).members  # more non-members, same members
    assert not set(wide.members) & set(wide.nonmembers)
    short = C.split_members("s", texts, 15, seed=1, n_out=100)  # a small set keeps all its other items
    assert len(short.nonmembers) == 25


def test_detector_pairs_are_paired_over_the_same_texts() -> None:
    from types import SimpleNamespace

    from repro import stats
    from repro.mink import experiment as ex

    rng = np.random.default_rng(0)
    splits, scores = [], {}
    for name, n in (("a", 40), ("b", 60)):
        split = C.MemberSplit(name, [f"{name}m{i}" for i in range(n)], [f"{name}n{i}" for i in range(2 * n)])
        y = split.labels
        common = rng.normal(size=y.size)
        dets = {d: common + shift * y + 0.3 * rng.normal(size=y.size) for d, shift in ((ex.MK, 1.0), ("PPL", 0.6))}
        dets |= {ex.MKPP: dets[ex.MK] + 0.1 * rng.normal(size=y.size), "Zlib": rng.normal(size=y.size)}
        dets |= {"Lowercase": dets["Zlib"], "Ref": dets[ex.MK] + y, "DC-PDD": dets["PPL"]}
        splits.append(split)
        scores[("main", name)] = dets
    study = SimpleNamespace(
        splits=splits,
        news=C.MemberSplit("news", [], []),
        scores=scores,
        params=SimpleNamespace(seed=0),
        runs={"main": SimpleNamespace(condition="main", seed=0)},  # one seed: the text bootstrap alone
    )
    pairs = ex.pairs_table(study).set_index("contrast")
    by_hand = np.mean([stats.fast_auc(s.labels, scores[("main", s.name)][ex.MK]) for s in splits]) - np.mean(
        [stats.fast_auc(s.labels, scores[("main", s.name)]["PPL"]) for s in splits]
    )
    row = pairs.loc["Min-K% − PPL"]
    assert row.difference == pytest.approx(by_hand, abs=1e-12)
    # the shared component cancels in the paired contrast: its interval is far narrower than two unpaired AUC intervals
    single = [stats.delong_interval(s.labels, scores[("main", s.name)][ex.MK]) for s in splits]
    assert row.ci_high - row.ci_low < np.mean([iv.high - iv.low for iv in single])
    assert row.ci_low > 0  # a shift of 1.0 against 0.6 on 100 members is detected
    assert "within set and class" in row.test


def test_training_position_is_the_step_of_each_items_block() -> None:
    from types import SimpleNamespace

    from repro.mink import experiment as ex

    class Tok:
        eos_token_id = 0

        def __call__(self, docs, add_special_tokens=False):
            return {"input_ids": [[len(d)] * len(d) for d in docs]}

    # the blocks of test_pack_blocks...: "XY" is in block 2 of 4, "fgh" starts in block 1
    run = SimpleNamespace(docs=["abcde", "XY", "fgh", "XY"], blocks=["XY", "XY"])
    study = SimpleNamespace(runs={"r": run}, tokenizer=Tok(), params=SimpleNamespace(block_size=4, batch_size=1))
    after = ex.training_position(study, "r")
    assert list(after) == ["XY"]  # a repeated item counts from its first copy
    assert after["XY"] == pytest.approx(1 - 3 / 4)  # trained at step 3 of 4: a quarter of the epoch follows
    study.params.batch_size = 2  # two blocks per optimizer step: step 2 of 2, nothing follows
    assert ex.training_position(study, "r")["XY"] == pytest.approx(0.0)


def test_length_words_read_the_paired_interval() -> None:
    import pandas as pd

    from repro import stats
    from repro.mink import experiment as ex

    table = pd.DataFrame(
        [
            {"tokens": n, "detector": d, "auc": a, "ci_low": a - 0.1, "ci_high": a + 0.1, "texts_cut": c}
            for n, a, c in ((32, 0.61, 0.9), (256, 0.74, 0.2))
            for d in ("Min-K%", "PPL")
        ]
    )
    words = lambda low, high: ex.length_words(table, stats.Interval(0.13, low, high, "paired AUC"))
    assert "rises with length" in words(0.02, 0.25) and "0.610" in words(0.02, 0.25) and "90 %" in words(0.02, 0.25)
    assert "falls with length" in words(-0.3, -0.01)
    assert "does not change with length" in words(-0.05, 0.3)
    assert "no length comparison" in ex.length_words(table, None)


def test_matched_words_read_the_sizes_against_table_3() -> None:
    from repro.mink import experiment as ex

    matched = pd.DataFrame(
        {
            "set": ["BoolQ", "CSQA"],
            "ours, 58 %": [0.60, 0.70],
            "ours, 37 %": [0.62, 0.69],
            "ours, 10 %": [0.64, 0.74],
            "paper 0.17M (about 60 %)": [0.75, 0.65],
            "paper 0.27M (about 38 %)": [0.80, 0.72],
            "paper 27M, Table 3 (0.1 %)": [0.91, 0.81],
        }
    )
    words = ex.matched_words(matched)
    assert "From 58 % to 10 % contaminants" in words and "in 1 of the 2 sets" in words  # CSQA dips at 37 %
    assert "0.650 → 0.690" in words and "Table 3's mean at 0.1 % is 0.86" in words
    assert "move toward it" in words and "still 0.17 below it" in words
    assert ex.matched_words(matched.drop(columns=["ours, 37 %", "ours, 10 %"])) == ""


def test_an_aligned_reference_scores_the_span_the_target_scored() -> None:
    """With the target's own model and tokenizer as the reference, the aligned reference's loss is the target's loss
    of the same (truncated) text: the span is the target's first max_length tokens, the total NLL spread over the
    target's scored tokens. So a reference with another tokenizer is compared on the same text."""
    from types import SimpleNamespace

    from repro.mink import corpora as C
    from repro.mink import experiment as ex

    tok, vocab = word_tokenizer()
    model = tiny_lm(vocab=len(vocab))
    texts = ["the cat sat on the mat", "a dog ran", "the big red dog ran fast on a small mat", "cat sat", "a dog ran"]
    p = SimpleNamespace(max_length=4, ks=KS, score_batch=2)
    aligned = ex.aligned_reference(texts, tok, model, tok, p)
    target = C.score_table(model, tok, texts, KS, False, 2, 4)
    assert aligned.index.tolist() == list(dict.fromkeys(texts))  # indexed by distinct text, as score_table
    np.testing.assert_allclose(aligned["loss"], target.loc[aligned.index, "loss"], rtol=1e-5)
    # the long texts' spans are their first 4 words: scoring them in full would differ
    whole = C.score_table(model, tok, texts, KS, False, 2, 16)
    assert abs(aligned.loc[texts[2], "loss"] - whole.loc[texts[2], "loss"]) > 1e-3


@pytest.mark.trains
def test_exported_burn_in_and_run_train_in_order_into_the_notebook_cache(tmp_path, monkeypatch) -> None:
    """The `paper` route: the burn-in's command (--keep-state) first, then a run's command (--start the burn-in):
    both fill the cache the notebook reads, and the run continues the burn-in's optimizer."""
    from transformers import AutoTokenizer

    from repro.pretrained import smollm2_path

    tok = AutoTokenizer.from_pretrained(smollm2_path())  # before REPRO_DATA moves: no second 0.5 GB conversion
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    base = tmp_path / "tiny"
    tiny_lm(vocab=len(tok)).save_pretrained(base)
    tok.save_pretrained(base)
    cfg = pretraining.PretrainConfig(learning_rate=1e-3, block_size=8, batch_size=2, seed=1)
    background = ["Background text about rivers and hills.", "More background, about towns."] * 3
    burn = pretraining.export_corpus("burn_in", base, background, cfg, keep_state=True)
    assert burn.endswith(" --keep-state")
    assert pretraining.main(burn.split()[4:]) == 0
    start = pretraining.checkpoint_dir("burn_in", base, background, cfg, keep_state=True)
    assert pretraining.has_optimizer_state(start)
    docs = ["A short document about cats.", "MEMBER: a contaminated item.", "Another one, about dogs."] * 2
    run = pretraining.export_corpus("main", base, docs, cfg, ["MEMBER: a contaminated item."], start)
    assert f" --start {start}" in run
    assert pretraining.main(run.split()[4:]) == 0
    _, stats = pretraining.cached_pretraining(
        "main", base, docs, cfg, keep_whole=["MEMBER: a contaminated item."], start=start
    )
    assert stats["cached"] and stats["steps"] >= 1
    shutil.rmtree(start)  # the burn-in's optimizer state (twice the tiny model's 49k-token embedding) goes
    assert not large_files(tmp_path)
