"""A change of a scoring parameter reuses the trained models, attacks and generations: the chapter runs again without
computing a single gradient (every training step, fine-tune and gradient attack needs one)."""

from __future__ import annotations

import pytest

from conftest import TrainsOutsideTheGroup, _no_gradients
from repro.runner import execute_here

# (notebook, a parameter that only changes how cached models are scored, a smoke value other than the profile's)
SCORING = [
    ("rmd_near_ood", "n_boot", 60),  # bootstrap resamples per interval
    ("deepgini_apfd", "kmnc_k", [50]),  # KMNC's section count: the retraining runs and their scores reused
    ("mink_contamination", "ks", [0.1, 0.2, 0.5]),  # Min-K% fractions scored
    ("crt_canary_exposure", "n_null", 60),  # draws of every attack's null distribution
    ("clm_ood", "n_boot", 60),  # bootstrap resamples per interval: the fine-tune and every generation reused
]
# what a chapter computes without a gradient, refused as well (module, function)
NO_GRADIENT_WORK = {"clm_ood": [("repro.clm_ood.clm", "generate"), ("repro.clm_ood.clm", "teacher_forced")]}


@pytest.mark.parametrize(
    ("stem", "name", "value"),
    SCORING,
    ids=["rmd_near_ood", "deepgini_apfd", "mink_contamination", "crt_canary_exposure", "clm_ood"],
)
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
