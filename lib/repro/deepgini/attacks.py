"""The DeepGini paper's attacks (FGSM, BIM, JSMA, C&W-L2) through adversarial-robustness-toolbox (ART).

Two constructions of the adversarial half of the mixed test set:
- "artifact": as the authors' artifact builds it (foolbox 1.7, `generate_adv.py`): FGSM searches for the
  smallest step that fools the model, BIM searches over epsilons, and every attempt that fails is dropped;
- "fixed": one fixed epsilon per attack, failures kept (this chapter's first version), kept as an ablation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from torch import nn

from .. import cache

__all__ = ["ARTIFACT", "FIXED", "AdversarialSet", "adversarial_examples", "attack_set", "classifier"]

CW_KWARGS = {"confidence": 0.0, "max_iter": 10, "binary_search_steps": 3, "learning_rate": 0.05, "initial_const": 1.0}
JSMA_KWARGS = {"theta": 1.0, "gamma": 0.1}
BIM_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
# BIM that stops each image at its first step that fools the model, as the artifact's foolbox BIM returns as soon as
# it succeeds (and binary-searches its step): ART's BasicIterativeMethod runs every step inside ε and overshoots
FIRST_SUCCESS_BIM = "first-success BIM"

# name -> (ART class name, keyword arguments per try); an attack with several tries keeps, for each image, the first
# try that fools the model. Inputs live in [0, 1].
ARTIFACT: dict[str, tuple[str, list[dict[str, object]]]] = {
    "FGSM": ("FastGradientMethod", [{"eps": 1.0, "eps_step": 0.01, "minimal": True}]),
    "BIM": (FIRST_SUCCESS_BIM, [{"eps": e, "eps_step": e / 10, "max_iter": 10} for e in BIM_GRID]),
    "JSMA": ("SaliencyMapMethod", [JSMA_KWARGS]),
    "CW-L2": ("CarliniL2Method", [CW_KWARGS]),
}
FIXED: dict[str, tuple[str, list[dict[str, object]]]] = {
    "FGSM-0.01": ("FastGradientMethod", [{"eps": 0.01}]),
    "FGSM-0.1": ("FastGradientMethod", [{"eps": 0.1}]),
    "BIM-0.1": ("BasicIterativeMethod", [{"eps": 0.1, "eps_step": 0.01, "max_iter": 20}]),
    "JSMA": ("SaliencyMapMethod", [JSMA_KWARGS]),
    "CW-L2": ("CarliniL2Method", [CW_KWARGS]),
}
ATTACKS = {**ARTIFACT, **{f"fixed {k}": v for k, v in FIXED.items()}}
ATTACK_SEED = 0  # the global generators ART draws from, seeded for every attack (JSMA's random target classes)


def classifier(model: nn.Module, shape: tuple[int, ...], classes: int):
    """ART PyTorchClassifier around a trained model with inputs clipped to [0, 1]."""
    import torch
    from art.estimators.classification import PyTorchClassifier

    return PyTorchClassifier(
        model=model,
        loss=nn.CrossEntropyLoss(),
        input_shape=tuple(shape),
        nb_classes=classes,
        clip_values=(0.0, 1.0),
        device_type="gpu" if torch.cuda.is_available() else "cpu",
    )


def _predict(art_classifier, x: np.ndarray) -> np.ndarray:
    """Predicted labels of the wrapped model."""
    return art_classifier.predict(x.astype(np.float32), batch_size=1024).argmax(axis=1)


def adversarial_examples(art_classifier, x: np.ndarray, y: np.ndarray, attack: str, batch: int = 128) -> np.ndarray:
    """Adversarial versions of x under `attack` of ATTACKS: per image, the first try that fools the model (else the last)."""
    import art.attacks.evasion as evasion

    if attack not in ATTACKS:
        raise ValueError(f"unknown attack {attack!r}: pass one of {', '.join(ATTACKS)}")
    cls_name, tries = ATTACKS[attack]
    out = x.astype(np.float32).copy()
    todo = np.arange(len(x))
    for kwargs in tries:
        if not todo.size:
            break
        if cls_name == FIRST_SUCCESS_BIM:
            out[todo] = bim_first_success(art_classifier, x[todo].astype(np.float32), y[todo], **kwargs)
        else:
            attack_class = _active_only_fgm() if kwargs.get("minimal") else getattr(evasion, cls_name)
            attacker = attack_class(art_classifier, batch_size=batch, **kwargs, **_quiet(cls_name))
            with _seeded_globals(ATTACK_SEED):
                out[todo] = attacker.generate(x[todo].astype(np.float32)).astype(np.float32)
        todo = todo[_predict(art_classifier, out[todo]) == y[todo]]
    return out


def _active_only_fgm():
    """ART's FastGradientMethod whose minimal search predicts, at each ε, only the images not yet fooled.

    ART's `_minimal_perturbation` re-predicts the whole batch at every step of ε (100 steps for the artifact's
    FGSM), although a fooled image no longer changes; this one predicts the rest only. The steps, the ε
    accumulated in floating point and the stopping rule are ART's, so the examples are the same bits
    (tests/test_deepgini_experiment.py compares the two)."""
    from art.attacks.evasion import FastGradientMethod

    class ActiveOnlyFGM(FastGradientMethod):
        def _minimal_perturbation(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
            if isinstance(self.eps, np.ndarray) or isinstance(self.eps_step, np.ndarray) or self.targeted:
                return super()._minimal_perturbation(x, y, mask)  # only the scalar, untargeted search is rewritten
            adv_x = x.copy()
            per_input_mask = mask is not None and len(mask.shape) == len(x.shape)  # else broadcast to every batch
            for start in range(0, len(adv_x), self.batch_size):
                stop = start + self.batch_size
                batch, labels = adv_x[start:stop], np.argmax(y[start:stop], axis=1)
                perturbation = self._compute_perturbation(
                    batch, y[start:stop], mask[start:stop] if per_input_mask else mask
                )
                active, eps = np.arange(len(batch)), self.eps_step
                while active.size > 0 and eps <= self.eps:
                    current = self._apply_perturbation(x[start:stop][active], perturbation[active], eps)
                    batch[active] = current
                    preds = self.estimator.predict(batch[active], batch_size=self.batch_size)
                    active = active[labels[active] == np.argmax(preds, axis=1)]
                    eps = eps + self.eps_step
            return adv_x

    return ActiveOnlyFGM


def bim_first_success(
    art_classifier, x: np.ndarray, y: np.ndarray, eps: float, eps_step: float, max_iter: int
) -> np.ndarray:
    """L∞ BIM from x (ART's steps: sign of the loss gradient at the predicted label, projected on the ε-ball and
    [0, 1]) that freezes each image at its first step where the model's label differs from y."""
    pred = _predict(art_classifier, x)
    target = np.eye(art_classifier.nb_classes, dtype=np.float32)[pred]  # ART's untargeted default: the prediction
    adv = x.copy()
    active = np.flatnonzero(pred == y)
    for _ in range(max_iter):
        if not active.size:
            break
        grad = art_classifier.loss_gradient(adv[active], target[active])
        step = np.clip(adv[active] + eps_step * np.sign(grad), x[active] - eps, x[active] + eps)
        adv[active] = np.clip(step, 0.0, 1.0).astype(np.float32)
        active = active[_predict(art_classifier, adv[active]) == y[active]]
    return adv


@contextmanager
def _seeded_globals(seed: int) -> Iterator[None]:
    """NumPy's and torch's global generators seeded by `seed` inside the block, restored to their state after it.

    ART draws from them: JSMA without labels picks each class's target with np.random.choice, so unseeded its
    adversarial examples depend on whatever ran before (a model trained, or loaded from the cache instead)."""
    import torch

    state = np.random.get_state()
    np.random.seed(seed)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
    finally:
        np.random.set_state(state)


def _quiet(cls_name: str) -> dict[str, bool]:
    """ART's own progress bars off (the chapter shows one bar per attack)."""
    return {} if cls_name == "FastGradientMethod" else {"verbose": False}


@dataclass(frozen=True)
class AdversarialSet:
    """The adversarial examples one attack produced, their source test images, and how many images it tried."""

    attack: str
    x: np.ndarray
    source: np.ndarray
    fooled: np.ndarray  # per kept example: does the model misclassify it
    tried: int

    @property
    def success_rate(self) -> float:
        """Share of the tried images on which the attack fooled the model."""
        return float(self.fooled.sum() / self.tried) if self.tried else float("nan")


def same_attack(attack: str) -> str:
    """The first name in ATTACKS with the same definition as `attack`: the fixed-ε ablation's JSMA is the artifact
    set's JSMA (one class, the same arguments, the same seeded globals), so on the same images it reads the artifact
    set's examples instead of attacking again (their kept examples differ: the ablation keeps the failures)."""
    return next(name for name, definition in ATTACKS.items() if definition == ATTACKS[attack])


def attack_set(
    model: nn.Module, x: np.ndarray, y: np.ndarray, attack: str, idx: Sequence[int], classes: int, keep_failures: bool
) -> AdversarialSet:
    """Attack the test images x[idx] (cached like trained weights); keep only successes unless keep_failures."""
    idx = np.asarray(idx, dtype=np.int64)
    weights = [v.detach().cpu().numpy() for v in model.state_dict().values()]
    path = cache.entry_path(
        "adversarial", same_attack(attack).replace(" ", "-"), weights, x[idx], y[idx], ATTACKS.get(attack),
        suffix=".npz",
    )  # fmt: skip

    def build(tmp) -> None:
        clf = classifier(model, x.shape[1:], classes)
        adv = adversarial_examples(clf, x[idx], y[idx], attack)
        with open(tmp, "wb") as f:
            np.savez_compressed(f, x=adv, fooled=_predict(clf, adv) != y[idx])

    def load(found) -> tuple[np.ndarray, np.ndarray]:
        with np.load(found) as z:
            return z["x"], z["fooled"]

    adv, fooled = cache.file_entry(path, build, load)[0]
    keep = np.ones(len(idx), bool) if keep_failures else fooled
    return AdversarialSet(attack, adv[keep], idx[keep], fooled[keep], len(idx))
