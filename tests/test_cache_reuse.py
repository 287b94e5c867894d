"""A change of a scoring parameter reuses the trained models, attacks and generations: the chapter runs again without
computing a single gradient (every training step, fine-tune and gradient attack needs one). Where a reading-group
exercise makes such a change, its run (the one the guide shows) is the test's."""

from __future__ import annotations

import pytest

from conftest import TrainsOutsideTheGroup, _no_gradients, exercise_gradients, exercise_run
from repro.runner import execute_here

# (notebook, a reading-group exercise of the notebook that changes only how cached models are scored): its run is the
# one the book's guide shows (conftest.exercise_run, shared with tests/test_book.py and tests/test_sessions.py)
SCORING_EXERCISES = [
    ("rmd_near_ood", {"pc_ks": [2, 8, 32]}),  # PCs kept for RMD: the encoders, CNNs and features reused
    ("deepgini_apfd", {"kmnc_k": [10, 100]}),  # KMNC's section counts: the retraining runs and their scores reused
    ("mink_contamination", {"ks": [0.2, 1.0]}),  # Min-K% fractions scored: the checkpoints and token scores reused
    ("crt_canary_exposure", {"n_mia": 80}),  # member / look-alike pairs: every model and the arm's fine-tunes reused
]
# (notebook, a parameter that only changes how cached models are scored, a smoke value other than the profile's), for
# a chapter whose exercises all train
SCORING = [("clm_ood", "n_boot", 60)]  # bootstrap resamples per interval: the fine-tune and every generation reused
# what a chapter computes without a gradient, refused as well (module, function)
NO_GRADIENT_WORK = {"clm_ood": [("repro.clm_ood.clm", "generate"), ("repro.clm_ood.clm", "teacher_forced")]}


def test_the_scoring_exercises_are_the_guides_exercises() -> None:
    from repro import sessions

    for stem, override in SCORING_EXERCISES:
        assert override in [ex["override"] for ex in sessions.load(stem)["exercises"]], stem


@pytest.mark.parametrize(("stem", "override"), SCORING_EXERCISES, ids=[s for s, _ in SCORING_EXERCISES])
def test_a_scoring_exercise_trains_nothing(smoke_results: dict, stem: str, override: dict) -> None:
    before = smoke_results[stem]  # the smoke run that filled the caches
    assert all(before["params"][name] != value for name, value in override.items())
    after = exercise_run(stem, override)
    assert exercise_gradients(stem, override) == 0, f"{stem}: changing only {override} trained again"
    assert all(after["params"][name] == value for name, value in override.items())
    assert set(after["tables"]) == set(before["tables"])


@pytest.mark.parametrize(("stem", "name", "value"), SCORING, ids=[s for s, _, _ in SCORING])
def test_a_scoring_parameter_change_trains_nothing(
    smoke_results: dict, stem: str, name: str, value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    before = smoke_results[stem]  # the smoke run that filled the caches
    assert before["params"][name] != value
    for module, function in NO_GRADIENT_WORK.get(stem, []):

        def refuse(*args, _what=f"{module}.{function}", **kwargs):
            raise AssertionError(f"{stem}: changing only {name} ran {_what} again")

        monkeypatch.setattr(importlib.import_module(module), function, refuse)
    try:
        with _no_gradients(f"{stem} with {name} = {value}"):
            after = execute_here(stem, "smoke", {name: value})
    except TrainsOutsideTheGroup:
        pytest.fail(f"{stem}: changing only {name} to {value} trained again (a gradient was computed)")
    assert after["params"][name] == value
    assert set(after["tables"]) == set(before["tables"])


def test_a_kept_value_is_built_once_per_key_and_rebuilt_when_damaged(tmp_path, monkeypatch) -> None:
    import pandas as pd

    from repro import cache

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    built = []

    def build(n: int = 3) -> pd.DataFrame:
        built.append(n)
        return pd.DataFrame({"n": range(n), "x": [0.5] * n})

    first = cache.kept("features", "toy", build, "code", {"n": 3})
    again = cache.kept("features", "toy", lambda: build(99), "code", {"n": 3})  # same key: read back, not built
    assert built == [3] and again.equals(first) and len(again) == 3
    cache.kept("features", "toy", lambda: build(4), "code", {"n": 4})
    assert built == [3, 4]
    (entry,) = [p for p in (tmp_path / "features").iterdir() if p.read_bytes() and len(pd.read_pickle(p)) == 3]
    entry.write_bytes(entry.read_bytes()[:20])  # a truncated entry is discarded and built again
    assert len(cache.kept("features", "toy", lambda: build(3), "code", {"n": 3})) == 3 and built == [3, 4, 3]


def test_a_table_is_digested_by_every_cell_not_its_printed_form() -> None:
    import pandas as pd

    from repro import cache

    a = pd.DataFrame({"v": range(200)})
    b = a.copy()
    b.loc[100, "v"] = -1  # a row pandas leaves out when it prints the table
    assert str(a) == str(b) and cache.digest(a) != cache.digest(b)
    assert cache.digest(a) == cache.digest(a.copy()) and cache.digest(a) != cache.digest(a.rename(columns={"v": "w"}))


def test_parameters_only_refuse_every_other_parameter() -> None:
    from repro.params import Resolved

    p = Resolved({"seed": 0, "n_boot": 200, "epochs": 3}).only("seed", "epochs")
    assert p == {"seed": 0, "epochs": 3} and p.seed == 0
    with pytest.raises(AttributeError):
        _ = p.n_boot
    with pytest.raises(KeyError):
        Resolved({"seed": 0}).only("n_boot")


def test_a_cached_rerun_of_deepgini_computes_none_of_its_kept_steps(smoke_results: dict, monkeypatch) -> None:
    """The smoke run kept every costly step of the DeepGini chapter (subjects, APFD orders, further models, tails,
    timings, CAM benchmark, retraining); a re-run reads them back: refusing what they compute changes no table."""
    import json

    from repro.deepgini import coverage, experiment, retraining

    before = smoke_results["deepgini_apfd"]
    steps = [(experiment, "see"), (experiment, "fit_references"), (experiment, "apfd_table"),
             (experiment, "end_to_end_timings"), (experiment, "scaling_timings"), (coverage, "cam_order_naive"),
             (retraining, "run"), (retraining, "run_iterative")]  # fmt: skip
    for module, name in steps:

        def refuse(*args, _name=name, **kwargs):
            raise AssertionError(f"a cached re-run of deepgini_apfd ran {_name} again")

        monkeypatch.setattr(module, name, refuse)
    after = execute_here("deepgini_apfd", "smoke", {})
    same = lambda t: json.loads(json.dumps(t, sort_keys=True, default=str))
    assert same(after["tables"]) == same(before["tables"])


@pytest.mark.trains
def test_the_exercises_gradient_count_counts_backward_passes() -> None:
    import torch

    from conftest import _counting_gradients

    count = [0]
    with _counting_gradients(count):
        x = torch.ones(2, requires_grad=True)
        (x * x).sum().backward()
        torch.autograd.grad((x * 3).sum(), x)
    assert count == [2] and x.grad.tolist() == [2.0, 2.0]
