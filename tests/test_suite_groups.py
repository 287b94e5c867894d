"""The suite's two workers: what runs in the training group, and the guard on every other test."""

from __future__ import annotations

import pytest
import torch

from conftest import ROOT, TRAINING_FILES, TRAINING_GROUP, TrainsOutsideTheGroup


def test_a_gradient_outside_the_training_group_fails_naming_the_test() -> None:
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(
        TrainsOutsideTheGroup, match=r"test_suite_groups\.py::test_a_gradient_outside.*mark it `trains`"
    ):
        (x * 2).sum().backward()
    with pytest.raises(TrainsOutsideTheGroup):
        torch.autograd.grad((x * 2).sum(), x)
    assert (x * 2).sum().item() == 6.0  # a forward pass stays allowed: the other worker may score models


def test_the_guard_leaves_torch_dynamo_rule_table_consistent() -> None:
    """transformers builds this table on import; replacing torch's public gradient functions broke it (CI, stop 43)."""
    from torch._dynamo import trace_rules

    trace_rules.get_torch_obj_rule_map.cache_clear()
    try:
        rules = trace_rules.get_torch_obj_rule_map()
    finally:
        trace_rules.get_torch_obj_rule_map.cache_clear()  # not keep a table built while the guard is on
    assert rules[torch.autograd.grad] is not None


@pytest.mark.trains
def test_a_test_marked_trains_may_compute_gradients(request: pytest.FixtureRequest) -> None:
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert TRAINING_GROUP in {m.args[0] for m in request.node.iter_markers("xdist_group")}


def test_the_training_files_exist_and_make_test_runs_two_workers_by_group() -> None:
    assert all((ROOT / "tests" / name).is_file() for name in TRAINING_FILES)
    assert "pytest -n 2 --dist loadgroup" in (ROOT / "Makefile").read_text()
