"""What the data-selection chapter's smoke run must show, in numbers (replaces test_notebooks.py's
test_data_selection_chapter_tables, written for the second pass's equal-documents arm)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def _table(results: dict, name: str) -> pd.DataFrame:
    return pd.DataFrame(results["data_selection"]["tables"][name])


def test_data_selection_smoke_tables(smoke_results) -> None:
    from repro.data_selection.experiment import METHODS, ORACLE

    domains = _table(smoke_results, "domains")
    assert list(domains.domain) == ["Wikipedia", "NYT", "Reddit", "Amazon"]
    assert domains["token share"].sum() == pytest.approx(1.0, abs=2e-3)
    assert (domains.chunks >= domains.documents).all()  # every document cut into one or more chunks
    draws = _table(smoke_results, "selection_draws")
    assert len(draws) == 1 * 1 * 6 * 2 and list(dict.fromkeys(draws.method)) == list(METHODS)
    tokens = draws.groupby("method").tokens.mean()
    assert tokens.max() / tokens.min() < 1.3  # equal tokens: every arm stops within a chunk past the same budget
    # the oracle draws from the target domain itself: nothing in common with any pool selection
    oracle = draws[draws.method == ORACLE]
    assert (oracle["shared with DSIR"] == 0).all() and (oracle["shared with top-k DSIR"] == 0).all()
    topk = draws[draws.method == "top-k DSIR"]
    assert (topk["shared with top-k DSIR"] == 1).all()
    view = _table(smoke_results, "selection")
    dsir_row = view[view.method == "DSIR"].iloc[0]
    own = draws[draws.method == "DSIR"]["shared with top-k DSIR"].mean()
    assert dsir_row["differs from top-k DSIR"] == pytest.approx(1 - own, abs=1e-3)
    ranks = _table(smoke_results, "dsir_rankings")
    assert ((ranks["empty target buckets"] > 0) & (ranks["empty target buckets"] < 1)).all()
    assert (ranks["top-k shared, package vs smoothed"].between(0, 1)).all()
    assert (ranks["chunks within 1 Gumbel SD of the cutoff"] >= 0).all() and (ranks["log weight SD (nats)"] > 0).all()
    assert ranks["selected share of the eligible pool"].between(0, 0.5).all()  # pool_problem: at most half the pool
    assert (draws["unigram perplexity"] > 1).all()
    mix = _table(smoke_results, "source_mix")
    src = [c for c in mix.columns if c.startswith("from ")]
    assert mix[src].sum(axis=1).to_numpy() == pytest.approx(1.0, abs=2e-3)  # every chunk from one domain
    oracle_mix = mix[mix.method == ORACLE].iloc[0]
    assert oracle_mix[f"from {oracle_mix.target}"] == pytest.approx(1.0)  # the oracle: the target's own text
    per_target = _table(smoke_results, "dsir_per_target")
    assert len(per_target) == 3 and (per_target.low <= per_target.ratio).all()
    assert (per_target.ratio <= per_target.high).all()
    assert len(_table(smoke_results, "kl_per_target")) == 1
    means = _table(smoke_results, "method_means")
    assert len(means) == 6 and np.isfinite(means[["kl_reduction", "quality"]].to_numpy()).all()
    assert np.isfinite(draws.kl_reduction).all() and (draws.perplexity > 1).all()
    sweep = _table(smoke_results, "doremi_sweep")
    assert list(sweep["noise share"]) == [0.4]
    doremi = _table(smoke_results, "doremi_domains")
    # the text domains' weights and the noise domain's sum to one; unequal training shares: natural is not uniform
    assert doremi["DoReMi weight"].sum() + sweep["noise weight, DoReMi"].iloc[0] == pytest.approx(1.0)
    base = doremi["baseline weight"].to_numpy()
    assert base[0] > base[-1] * 2  # doremi_fractions 1.0 ... 0.2
    assert (doremi["ratio low"] <= doremi.ratio).all() and (doremi.ratio <= doremi["ratio high"]).all()
    runs = _table(smoke_results, "doremi_weights")
    assert list(runs.domain) == ["Wikipedia", "NYT", "Reddit", "Amazon", "noise"]
    assert runs[["proxy run 1", "proxy run 2", "round 2"]].sum().to_numpy() == pytest.approx([1.0, 1.0, 1.0])
    mean = runs[["proxy run 1", "proxy run 2"]].mean(axis=1).to_numpy()
    assert mean[:4] == pytest.approx(doremi["DoReMi weight"].to_numpy())
    comparators = _table(smoke_results, "doremi_comparators")  # no uniform arm: the judged run has noise (0.4)
    assert list(comparators["DoReMi against"]) == ["natural shares (the paper's baseline)"]
    assert comparators["mean ratio"].iloc[0] == pytest.approx(sweep["mean ratio"].iloc[0])
    steps = _table(smoke_results, "steps_to_baseline")
    # text tokens: steps times DoReMi's text share over the baseline's (the noise domain takes the rest)
    unit = (1 - sweep["noise weight, DoReMi"].iloc[0]) / (1 - runs["natural share"].iloc[-1])
    assert steps["share of text tokens"].to_numpy() == pytest.approx(steps["share of steps"].to_numpy() * unit)
    weights = _table(smoke_results, "contamination_weights")
    assert weights.regime.nunique() == 2 and set(weights.templates) == {"with", "without"}
    claims = _table(smoke_results, "claims")
    verdict = _table(smoke_results, "verdict")
    assert set(verdict.claim) <= set(claims.claim) and len(verdict) >= len(claims) - 1
    assert ((verdict.ci_low <= verdict.ci_high) | verdict.ci_low.isna()).all()
    kl = claims[claims.claim.str.startswith("KL reduction")].iloc[0]
    assert "6 methods' means" in kl.regime
