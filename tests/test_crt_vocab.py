"""The CRT chapter's word vocabulary: built from π-redacted text, every other word spelled in characters, so that no
secret value is in it and a member and its look-alike are written alike (issue 24, section 1)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats as sps

from repro.crt import customersim, experiment, language_model, redaction, runs
from repro.params import Resolved, resolve

LM = language_model


@pytest.fixture(scope="module")
def default() -> Resolved:
    return Resolved(resolve({"profile": "default"}, experiment.SPEC))


@pytest.fixture(scope="module")
def data(default: Resolved) -> runs.Data:
    return runs.build_data(default)


def _secret_only_words(sentences: list[redaction.Sentence]) -> set[str]:
    """Words that occur in the training text only inside a secret (names, street names), longer than one character."""
    secret = {t for s in sentences for t, label in zip(s.tokens, s.labels) if label is not None}
    public = {t for s in sentences for t, label in zip(s.tokens, s.labels) if label is None}
    return {t for t in secret - public if len(t) > 1}


def test_spelling_worked_example() -> None:
    vocab = LM.Vocab.build_spelling([["hello", "world", "<MASK>"]], extra=["<MASK>"])
    ids, marks = vocab.encode_marked(["hello", "Bob", "!"], [False, True, False])
    pieces = [vocab.itos[i] for i in ids]
    assert pieces == [LM.BOS, "hello", "B", "##o", "##b", "!", LM.EOS]
    assert marks.tolist() == [0, 0, 1, 1, 1, 0, 0]  # every character of a flagged word carries its flag
    assert vocab.encode(["hello", "Bob", "!"]) == ids
    assert LM.UNK not in pieces and vocab.itos[0] == LM.PAD
    plain = LM.Vocab.build([["hello", "world"]])
    assert [plain.itos[i] for i in plain.encode(["hello", "Bob"])] == [LM.BOS, "hello", LM.UNK, LM.EOS]


def test_no_secret_value_is_in_the_vocabulary(data: runs.Data) -> None:
    vocab = experiment.word_vocabulary(data)
    secret_only = _secret_only_words(data.sentences)
    assert len(secret_only) > 100  # Faker names and street names: the test has something to find
    assert not secret_only & set(vocab.itos)
    raw = LM.Vocab.build([s.tokens for s in data.sentences])  # the old vocabulary, built from the raw text
    assert secret_only <= set(raw.itos)  # ... which held every one of them


def test_the_vocabulary_depends_on_the_redacted_text_alone(default: Resolved, data: runs.Data) -> None:
    """The same corpus with every secret replaced by a fresh value of its type gives the very same vocabulary."""
    train = customersim.insert_canaries(
        customersim.corpus(default.n_dialogues, default.seed),
        data.canaries,
        default.canary_copies,
        default.seed + 1,
    )
    rng = random.Random(99)
    other = redaction.split_sentences([[customersim.look_alike(t, rng) for t in d] for d in train])
    assert [s.text for s in other] != [s.text for s in data.sentences]
    swapped = runs.Data(data.canaries, other, data.test, data.policies, data.pairs, data.address_pairs, data.seed)
    assert experiment.word_vocabulary(swapped).itos == experiment.word_vocabulary(data).itos


def test_members_and_look_alikes_are_written_alike(data: runs.Data) -> None:
    vocab = experiment.word_vocabulary(data)
    unk = vocab.token_id(LM.UNK)
    for pairs in (data.pairs, data.address_pairs):
        members = [vocab.encode(m.tokens) for m, _ in pairs]
        looks = [vocab.encode(n.tokens) for _, n in pairs]
        assert not any(unk in ids for ids in members + looks)
        lengths = np.array([[len(a), len(b)] for a, b in zip(members, looks)])
        assert abs(lengths[:, 0].mean() - lengths[:, 1].mean()) < 1.0
        assert sps.mannwhitneyu(lengths[:, 0], lengths[:, 1]).pvalue > 0.05  # same length distribution
        assert sps.wilcoxon(lengths[:, 0] - lengths[:, 1], zero_method="zsplit").pvalue > 0.05  # paired
    raw = LM.Vocab.build([s.tokens for s in data.sentences])
    looks_raw = [raw.encode(n.tokens) for _, n in data.pairs]
    assert np.mean([raw.token_id(LM.UNK) in ids for ids in looks_raw]) > 0.2  # the old vocabulary's <unk> look-alikes


def test_the_canary_context_and_digits_are_single_tokens(data: runs.Data) -> None:
    vocab = experiment.word_vocabulary(data)
    context = vocab.encode(["My", "ID", "is", ":"])
    assert len(context) == 6 and vocab.token_id(LM.UNK) not in context
    canary = [t for s in data.sentences if "id" in s.labels for t in s.tokens]
    digits = {vocab.token_id(str(d)) for d in range(10)}
    assert len(digits) == 10
    assert all(len(vocab.pieces(t)) == 1 for t in canary)
