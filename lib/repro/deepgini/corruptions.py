"""A naturally shifted test set beside the adversarial one: the original test images under four common corruptions.

Weiss & Tonella (ISSTA 2022) re-ran test prioritization on corrupted inputs (MNIST-C, Fashion-MNIST-C style) as
well as adversarial ones: an adversarial example is misclassified because an attack pushed it just past the
decision boundary, so its softmax is nearly always undecided and DeepGini's win is close to automatic there. A
corrupted image can be misclassified with a confident softmax. The corruptions are generated here, on the images
in [0, 1] (n, C, H, W), each at one fixed severity:

- "noise": additive Gaussian noise, σ = 0.3, clipped to [0, 1];
- "blur": Gaussian blur, σ = 1.5 pixels;
- "rotation": rotation by an angle drawn uniformly from ±[15°, 45°] per image (bilinear, zero fill);
- "contrast": contrast reduced to 30 % around each image's mean.
"""

from __future__ import annotations

import numpy as np

from .testsets import MixedSet

__all__ = ["CORRUPTIONS", "corrupt", "corrupted_set"]

NOISE_SIGMA = 0.3
BLUR_SIGMA = 1.5
ROTATION_DEGREES = (15.0, 45.0)
CONTRAST = 0.3
CORRUPTIONS = ("noise", "blur", "rotation", "contrast")


def corrupt(x: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """The images x (n, C, H, W) in [0, 1] under corruption `kind` of CORRUPTIONS, float32 in [0, 1]."""
    from scipy import ndimage

    x = np.asarray(x, dtype=np.float32)
    if kind == "noise":
        out = x + rng.normal(0.0, NOISE_SIGMA, size=x.shape).astype(np.float32)
    elif kind == "blur":
        out = ndimage.gaussian_filter(x, sigma=(0, 0, BLUR_SIGMA, BLUR_SIGMA))
    elif kind == "rotation":
        low, high = ROTATION_DEGREES
        angles = rng.uniform(low, high, size=len(x)) * rng.choice([-1.0, 1.0], size=len(x))
        out = x.copy()
        for i, angle in enumerate(angles):
            out[i] = ndimage.rotate(x[i], angle, axes=(1, 2), reshape=False, order=1, mode="constant")
    elif kind == "contrast":
        mean = x.mean(axis=(1, 2, 3), keepdims=True)
        out = (x - mean) * CONTRAST + mean
    else:
        raise ValueError(f"unknown corruption {kind!r}: pass one of {', '.join(CORRUPTIONS)}")
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def corrupted_set(x: np.ndarray, y: np.ndarray, per_kind: int, seed: int) -> MixedSet:
    """The original tests plus each corruption applied to `per_kind` test images (at most all of them), drawn by a
    seeded permutation per corruption; kind is "original" or the corruption, source the test image's index."""
    rng = np.random.default_rng(seed)
    parts = [MixedSet(x, y, np.arange(len(x)), np.full(len(x), "original"))]
    for kind in CORRUPTIONS:
        idx = np.sort(rng.permutation(len(x))[: min(per_kind, len(x))])
        parts.append(MixedSet(corrupt(x[idx], kind, rng), y[idx], idx, np.full(len(idx), kind)))
    return MixedSet(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("x", "y", "source", "kind")))
