"""Table 8 of the Min-K% chapter: items parsed back from the corpus formats, option log-likelihoods against the
direct formula, and the memorization contrast on a worked example."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from repro.mink import answers
from repro.mink import corpora as C
from repro.mink import experiment as ex
from test_membership import tiny_lm


def test_items_parse_back_from_the_yes_no_and_choice_formats() -> None:
    yes_no = C.format_yes_no("Cats purr.", "Do cats purr", True)
    assert answers.parse(yes_no) == answers.Item("Cats purr.\nQuestion: Do cats purr?\nAnswer:", ("yes", "no"), 0)
    choice = C.format_choice("Where do fish live?", ["in trees", "in water", "in (B) caves"], "in water")
    item = answers.parse(choice)
    assert item.options == ("in trees", "in water", "in (B) caves")  # letters are found in order
    assert item.gold == 1 and item.prompt.endswith("\nAnswer:") and "Choices: (A) in trees" in item.prompt
    assert answers.parse(C.format_qa("Is water wet?", "Yes, it is.")) is None  # a free-form answer: no options
    assert answers.parse(C.format_review("Great film.")) is None
    assert answers.parse(yes_no.replace("Answer: yes", "Answer: maybe")) is None  # not among the options


@pytest.fixture(scope="module")
def smol_tokenizer():
    from transformers import AutoTokenizer

    from repro.data import MissingDataError
    from repro.pretrained import smollm2_path

    try:
        return AutoTokenizer.from_pretrained(smollm2_path())
    except MissingDataError as err:
        pytest.skip(f"SmolLM2-135M is not installed: {err}")


def test_option_log_likelihoods_equal_one_sequence_at_a_time(smol_tokenizer) -> None:
    tok = smol_tokenizer
    model = tiny_lm(vocab=len(tok))
    items = [
        answers.parse(C.format_yes_no("The sky is blue.", "Is the sky blue", True)),
        answers.parse(C.format_choice("Pick one", ["a red apple", "pear", "a very long banana split"], "pear")),
        answers.parse(C.format_yes_no("Short.", "Is it long", False)),
    ]
    batched = answers.option_logprobs(model, tok, items, batch_size=3)
    for item, got in zip(items, batched):
        for j, option in enumerate(item.options):
            prompt = tok(item.prompt)["input_ids"]
            tail = tok(" " + option, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logp = torch.log_softmax(model(input_ids=torch.tensor([prompt + tail])).logits[0].double(), -1)
            direct = sum(float(logp[len(prompt) + t - 1, tid]) for t, tid in enumerate(tail))
            assert got[j] == pytest.approx(direct, abs=1e-4), (item.prompt, option)
    right = answers.correct(model, tok, items, batch_size=2)
    assert right.tolist() == [int(np.argmax(s) == it.gold) for s, it in zip(batched, items)]


def test_memorization_contrast_worked_example() -> None:
    split = C.MemberSplit("strategyqa", ["m1", "m2", "m3", "m4"], ["n1", "n2", "n3", "n4"])
    runs = {"main": (0, "main"), "main s1": (1, "main"), "lr": (0, "lr"), "lr s1": (1, "lr")}
    answered = {  # members then non-members, 1 = answered correctly
        ("base", "strategyqa"): np.array([1, 0, 1, 0, 1, 0, 1, 0]),
        ("main", "strategyqa"): np.array([1, 1, 1, 1, 1, 0, 1, 0]),  # lead 1.0 - 0.5 = 0.5
        ("main s1", "strategyqa"): np.array([1, 1, 1, 0, 1, 0, 0, 0]),  # lead 0.75 - 0.25 = 0.5
        ("lr", "strategyqa"): np.array([1, 0, 1, 1, 1, 0, 1, 0]),  # lead 0.75 - 0.5 = 0.25
        ("lr s1", "strategyqa"): np.array([1, 0, 1, 0, 1, 0, 1, 0]),  # lead 0
    }
    study = SimpleNamespace(
        splits=[split, C.MemberSplit("truthful_qa", ["q"], ["r"])],  # no answers: not a multiple-choice set
        answered=answered,
        runs={name: SimpleNamespace(seed=s, condition=c) for name, (s, c) in runs.items()},
        params=SimpleNamespace(learning_rate=1e-4, low_learning_rate=1e-5),
    )
    iv = ex.memorization_contrast(study, seed=0)
    assert iv.estimate == pytest.approx(np.mean([0.5 - 0.25, 0.5 - 0.0]))  # paired by seed, then averaged
    assert iv.low < iv.estimate < iv.high and "2 seeds" in iv.method
    table = ex.answers_table(study)
    assert table.model.tolist() == ["base model", "learning rate 0.0001", "learning rate 1e-05"]
    assert table["members' lead"].tolist() == [0.0, 0.5, 0.125] and table.seeds.tolist() == [1, 2, 2]
    assert "+0.38" in ex.answers_words(table, iv)  # the estimate, glued
    assert ex.memorization_contrast(SimpleNamespace(**{**vars(study), "answered": {}}), 0) is None
