"""The DeepGini chapter's test sets: the original test set, and original plus adversarial examples."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from torch import nn
from tqdm.auto import tqdm

from . import attacks

CONSTRUCTIONS = {"artifact": attacks.ARTIFACT, "fixed": attacks.FIXED}
# the artifact's Fashion-MNIST LeNet-1 mixed set (exp_apfd/exp_fashion.py): 10,000 originals and 39,992 adversarial
# examples from FGSM, JSMA, BIM and C&W; it records no per-attack split
ARTIFACT_MAKEUP = {"original": 10_000, "adversarial": 39_992}


@dataclass(frozen=True)
class MixedSet:
    """Test inputs with labels, the test image each came from, and its kind ("original" or the attack)."""

    x: np.ndarray
    y: np.ndarray
    source: np.ndarray
    kind: np.ndarray

    def subset(self, keep: np.ndarray) -> MixedSet:
        """The rows where `keep` is true."""
        return MixedSet(self.x[keep], self.y[keep], self.source[keep], self.kind[keep])

    @cached_property
    def identity(self) -> str:
        """Digest of every array: what a cached step that takes this set is keyed by (computed once per set)."""
        from ..cache import digest

        return digest(self.x, self.y, self.source, self.kind.astype(str))


def build(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    construction: str,
    caps: Mapping[str, int | None],
    seed: int,
    classes: int = 10,
) -> tuple[MixedSet, pd.DataFrame]:
    """Original tests plus every attack of `construction` on the first caps[attack] images of a seeded permutation.

    "artifact" keeps successful examples only; "fixed" keeps every attempt. Returns the set and one row per attack:
    images attacked, examples kept, the success rate over every attacked image (as the artifact counts: an image the
    model already misclassifies is a success at zero perturbation, which foolbox 1.x returns without running the
    attack), and the same without those images (success_rate_correct: over the correctly classified images
    attacked), with how many of them were attacked and how many kept examples are unperturbed."""
    from . import nets

    if construction not in CONSTRUCTIONS:
        raise ValueError(f"construction must be one of {', '.join(CONSTRUCTIONS)}, got {construction!r}")
    picks = np.random.default_rng(seed).permutation(len(x))
    wrong = nets.predict_proba(model, x).argmax(1) != y  # the originals the model already misclassifies
    parts = [MixedSet(x, y, np.arange(len(x)), np.full(len(x), "original"))]
    rows = []
    for attack in tqdm(CONSTRUCTIONS[construction], desc=f"attacks ({construction})", leave=False):
        name = attack if construction == "artifact" else f"fixed {attack}"
        idx = picks[: caps.get(attack) or len(x)]
        made = attacks.attack_set(model, x, y, name, idx, classes, keep_failures=construction == "fixed")
        parts.append(MixedSet(made.x, y[made.source], made.source, np.full(len(made.source), attack)))
        unperturbed = (made.x == x[made.source]).reshape(len(made.source), -1).all(axis=1)
        correct = int((~wrong[idx]).sum())
        rows.append(
            {
                "construction": construction,
                "attack": attack,
                "images_attacked": made.tried,
                "examples_kept": len(made.source),
                "success_rate": made.success_rate,
                "already_misclassified": int(wrong[idx].sum()),
                "unperturbed_kept": int(unperturbed.sum()),
                "success_rate_correct": float((made.fooled & ~wrong[made.source]).sum() / correct)
                if correct
                else float("nan"),
                "mean_linf": float(np.abs(made.x - x[made.source]).max(axis=(1, 2, 3)).mean())
                if len(made.source)
                else float("nan"),
            }
        )
    mixed = MixedSet(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("x", "y", "source", "kind")))
    return mixed, pd.DataFrame(rows)


def makeup(mixed: MixedSet) -> dict[str, int]:
    """How many inputs of each kind the set holds."""
    kinds, counts = np.unique(mixed.kind, return_counts=True)
    return dict(zip(kinds.tolist(), counts.tolist()))
