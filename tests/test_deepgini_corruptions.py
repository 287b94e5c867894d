"""The corrupted test set of the DeepGini chapter: each corruption does what its docstring says, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from repro.deepgini import corruptions as c


def _images(n: int = 64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 0.8, size=(n, 1, 28, 28)).astype(np.float32)


def test_contrast_on_a_worked_example() -> None:
    """Pixels 0, 0.2, 0.4, 0.6 (mean 0.3) at 30 % contrast: 0.21, 0.27, 0.33, 0.39."""
    x = np.array([0.0, 0.2, 0.4, 0.6], np.float32).reshape(1, 1, 2, 2)
    out = c.corrupt(x, "contrast", np.random.default_rng(0))
    assert out.ravel() == pytest.approx([0.21, 0.27, 0.33, 0.39], abs=1e-6)


def test_noise_has_the_stated_sigma_and_stays_in_range() -> None:
    x = np.full((200, 1, 28, 28), 0.5, np.float32)
    out = c.corrupt(x, "noise", np.random.default_rng(1))
    assert out.min() >= 0 and out.max() <= 1
    # N(0.5, 0.3) clipped: 68.3 % within one sigma of 0.5, and 9.6 % beyond 0.5 / 0.3 sigma, clipped to 0 or 1
    assert (np.abs(out - 0.5) < 0.3).mean() == pytest.approx(0.6827, abs=0.005)
    assert ((out == 0) | (out == 1)).mean() == pytest.approx(0.0956, abs=0.005)


def test_blur_keeps_the_mean_and_smooths() -> None:
    x = _images()
    out = c.corrupt(x, "blur", np.random.default_rng(0))
    assert out.mean() == pytest.approx(x.mean(), abs=0.01)
    assert np.abs(np.diff(out, axis=3)).mean() < 0.3 * np.abs(np.diff(x, axis=3)).mean()


def test_rotation_turns_each_image_by_15_to_45_degrees() -> None:
    """A bar through the centre turned by the corruption: its angle is between 15 and 45 degrees either way."""
    x = np.zeros((20, 1, 29, 29), np.float32)
    x[:, 0, 14, 4:25] = 1.0  # a horizontal bar
    out = c.corrupt(x, "rotation", np.random.default_rng(3))
    yy, xx = np.mgrid[:29, :29] - 14
    for img in out[:, 0]:
        w = img / img.sum()
        cov = np.cov(np.vstack([xx.ravel(), yy.ravel()]), aweights=w.ravel())
        angle = abs(np.degrees(0.5 * np.arctan2(2 * cov[0, 1], cov[0, 0] - cov[1, 1])))
        assert 14 <= angle <= 46


def test_the_set_holds_the_originals_and_each_corruption_seeded() -> None:
    x, y = _images(50), np.arange(50) % 10
    a, b = c.corrupted_set(x, y, 20, seed=7), c.corrupted_set(x, y, 20, seed=7)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.source, b.source)
    assert len(a.y) == 50 + 4 * 20 and np.array_equal(a.y, y[a.source])
    kinds, counts = np.unique(a.kind, return_counts=True)
    assert dict(zip(kinds, counts)) == {"original": 50, "noise": 20, "blur": 20, "rotation": 20, "contrast": 20}
    assert len(c.corrupted_set(x, y, 500, seed=7).y) == 5 * 50  # at most every image per corruption
    assert not np.array_equal(c.corrupted_set(x, y, 20, seed=8).source, a.source)
    with pytest.raises(ValueError, match="unknown corruption"):
        c.corrupt(x, "fog", np.random.default_rng(0))
