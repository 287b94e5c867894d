"""The DeepGini paper's attacks (FGSM, BIM, JSMA, C&W-L2) through adversarial-robustness-toolbox (ART)."""

from __future__ import annotations

import numpy as np
from torch import nn

__all__ = ["ATTACKS", "adversarial_examples", "classifier"]

# name -> (ART class name, keyword arguments); inputs live in [0, 1]
ATTACKS: dict[str, tuple[str, dict[str, object]]] = {
    "FGSM-0.01": ("FastGradientMethod", {"eps": 0.01}),
    "FGSM-0.1": ("FastGradientMethod", {"eps": 0.1}),
    "BIM": ("BasicIterativeMethod", {"eps": 0.1, "eps_step": 0.01, "max_iter": 20, "verbose": False}),
    "JSMA": ("SaliencyMapMethod", {"theta": 1.0, "gamma": 0.1, "verbose": False}),
    "CW-L2": (
        "CarliniL2Method",
        {
            "confidence": 0.0,
            "max_iter": 10,
            "binary_search_steps": 3,
            "learning_rate": 0.05,
            "initial_const": 1.0,
            "verbose": False,
        },
    ),
}


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


def adversarial_examples(art_classifier, x: np.ndarray, attack: str, batch: int = 64) -> np.ndarray:
    """Untargeted adversarial versions of `x` (float32 in [0, 1]) under attack `attack` of ATTACKS."""
    import art.attacks.evasion as evasion

    if attack not in ATTACKS:
        raise ValueError(f"unknown attack {attack!r}: pass one of {', '.join(ATTACKS)}")
    cls_name, kwargs = ATTACKS[attack]
    attacker = getattr(evasion, cls_name)(art_classifier, batch_size=batch, **kwargs)
    return attacker.generate(x.astype(np.float32)).astype(np.float32)
