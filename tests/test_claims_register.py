"""Every chapter's claim register: the paper's words, comparator and regime, and rules that pass on the paper's own
numbers (a rule the paper's own numbers fail is a strawman and cannot land)."""

from __future__ import annotations

import importlib

import pytest

from repro.params import PROFILES, resolve
from repro.verdict import Claim

# chapter package -> where its parameter spec lives (the chapter's experiment module, or its claims module)
CHAPTERS = ("metrics_by_hand", "deepgini", "rmd", "crt", "mink", "data_selection", "clm_ood")
# Chapters whose paper's tables could not be read where the register was written: their rules compare directions and
# orderings, and their module docstring says so. Each entry is a debt: add the paper's numbers and remove it.
NO_PAPER_NUMBERS = {"clm_ood": "Ren et al. 2023's AUROC and τ tables were not readable offline"}


def register(chapter: str, profile: str) -> dict[str, Claim]:
    """The chapter's claims at a profile's parameter values, built as the notebook builds them."""
    module = importlib.import_module(f"repro.{chapter}.claims")
    spec = getattr(module, "SPEC", None)
    if spec is None:
        spec = importlib.import_module(f"repro.{chapter}.experiment").SPEC
    return module.claims(resolve({"profile": profile}, spec))


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_rule_passes_on_the_papers_own_numbers(chapter: str, profile: str) -> None:
    claims = register(chapter, profile)
    assert claims and all(isinstance(c, Claim) for c in claims.values())
    papers = [c for c in claims.values() if not c.ours]
    assert papers, f"{chapter}: no claim of the paper in its register"
    for c in papers:
        assert c.quote.strip() and c.comparator.strip() and c.regime is not None  # also enforced by Claim itself
        if c.paper_values:
            assert c.paper_estimate is not None, f"{chapter}: {c.claim!r} has paper values but no paper_estimate"
        decision = c.on_paper_numbers()
        assert decision in (None, "held"), (
            f"{chapter}: the rule of {c.claim!r} gives {decision!r} on the paper's numbers"
        )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_claims_are_distinct_and_their_rules_are_checked_on_some_paper_numbers(chapter: str) -> None:
    claims = register(chapter, "default")
    texts = [c.claim for c in claims.values()]
    assert len(set(texts)) == len(texts), f"{chapter}: two claims read the same"
    checked = [c for c in claims.values() if not c.ours and c.paper_estimate is not None]
    if chapter in NO_PAPER_NUMBERS:
        assert not checked, f"{chapter} has paper numbers now: remove it from NO_PAPER_NUMBERS"
        doc = importlib.import_module(f"repro.{chapter}.claims").__doc__ or ""
        assert "could not be read" in doc and "directions and" in doc, f"{chapter}: say why no paper numbers"
        return
    assert checked, f"{chapter}: no rule is checked against the paper's own numbers"


def test_deepgini_plans_the_iterative_claims_only_when_a_pair_runs_that_protocol() -> None:
    from repro.deepgini import claims as dg_claims
    from repro.deepgini.experiment import SPEC

    planned = dg_claims.claims(resolve({"profile": "smoke"}, SPEC))
    assert {"retraining", "retraining_random", "retraining_oneshot"} <= set(planned)
    assert "on each of the 1 pairs run so (1 per dataset)" in planned["retraining"].claim
    without = dg_claims.claims(resolve({"profile": "smoke", "iterative_pairs": 0}, SPEC))
    # the one-shot claim stays; the held-out, pool-accuracy and random rows of the iterative protocol go
    assert set(planned) - set(without) == {"retraining", "retraining_pool", "retraining_random"}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_claim_is_short_and_names_the_one_statistic_its_row_shows(chapter: str) -> None:
    """A verdict row is read in one glance: the claim in about 25 words, and one named statistic (with its units
    where it has any) that both the paper's column and ours show."""
    for c in register(chapter, "default").values():
        assert len(c.claim.split()) <= 30, f"{chapter}: {c.claim!r} runs to {len(c.claim.split())} words"
        assert c.stat not in ("the estimate", "the effect", "the attack"), f"{chapter}: {c.claim!r} names no statistic"
        if "exposure" in c.stat:
            assert "bits" in c.stat, f"{chapter}: {c.stat!r} does not say exposure is in bits"
        if c.paper_values and not c.ours:  # the paper column is the statistic on the paper's numbers
            assert c.paper_number is not None and c.on_paper_numbers() == "held", (chapter, c.claim)
