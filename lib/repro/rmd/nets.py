"""The RMD chapter's image nets: a small CNN classifier and a denoising auto-encoder, both giving penultimate features."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

Batchable = torch.Tensor | np.ndarray | Sequence[Any]


def images_tensor(images: np.ndarray, scale: float, size: int = 28) -> torch.Tensor:
    """Grey images (n, h, w) with values in [0, scale] as a float tensor (n, 1, size, size) in [0, 1]."""
    x = torch.as_tensor(np.asarray(images, dtype=np.float32) / scale)[:, None]
    return x if x.shape[-1] == size else F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


def conv_body(dim: int) -> nn.Sequential:
    """28x28 grey image -> `dim` linear features (no final ReLU, so no dead, constant feature columns)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, dim),
    )


class SmallCNN(nn.Module):
    """Classifier whose penultimate layer gives the features: returns (features, logits)."""

    def __init__(self, n_classes: int, dim: int = 64):
        super().__init__()
        self.body, self.head = conv_body(dim), nn.Sequential(nn.ReLU(), nn.Linear(dim, n_classes))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feats = self.body(x)
        return feats, self.head(feats)


class ConvAutoencoder(nn.Module):
    """Denoising auto-encoder on unlabeled images: returns (code, reconstruction)."""

    def __init__(self, dim: int = 64, noise: float = 0.2):
        super().__init__()
        self.noise = noise
        self.body = conv_body(dim)
        self.decoder = nn.Sequential(
            nn.ReLU(),
            nn.Linear(dim, 64 * 7 * 7),
            nn.ReLU(),
            nn.Unflatten(1, (64, 7, 7)),
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 1, 4, stride=2, padding=1),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        noisy = x + self.noise * torch.randn_like(x) if self.training else x
        code = self.body(noisy)
        return code, self.decoder(code)
