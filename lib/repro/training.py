"""Small torch models of the chapters, one generic training loop, and weights cached under data/."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .atomic import atomic_path
from .paths import data_dir

Batchable = torch.Tensor | np.ndarray | Sequence[Any]


def images_tensor(images: np.ndarray, scale: float, size: int = 28) -> torch.Tensor:
    """Grey images (n, h, w) with values in [0, scale] as a float tensor (n, 1, size, size) in [0, 1]."""
    x = torch.as_tensor(np.asarray(images, dtype=np.float32) / scale)[:, None]
    return x if x.shape[-1] == size else F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


def conv_body(dim: int) -> nn.Sequential:
    """28x28 grey image -> `dim` linear features (no final ReLU, so no dead, constant feature columns)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(64 * 7 * 7, dim),
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
            nn.ReLU(), nn.Linear(dim, 64 * 7 * 7), nn.ReLU(), nn.Unflatten(1, (64, 7, 7)),
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(32, 1, 4, stride=2, padding=1),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        noisy = x + self.noise * torch.randn_like(x) if self.training else x
        code = self.body(noisy)
        return code, self.decoder(code)


def device() -> torch.device:
    """The GPU when one is visible (the paper profile), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def on_device(batch: Any, model: nn.Module) -> Any:
    """Move a tensor batch to the model's device; lists (texts, images) are left to the model."""
    return batch.to(next(model.parameters()).device) if isinstance(batch, torch.Tensor) else batch


def concat(a: Batchable, b: Batchable) -> Batchable:
    """Rows of `a` then rows of `b`, for tensors, arrays or lists alike."""
    if isinstance(a, torch.Tensor):
        return torch.cat([a, b])
    return np.concatenate([a, b]) if isinstance(a, np.ndarray) else [*a, *b]


def take(inputs: Batchable, idx: np.ndarray) -> Any:
    """Rows `idx` of a tensor, an array or a list (texts)."""
    if isinstance(inputs, (torch.Tensor, np.ndarray)):
        return inputs[torch.as_tensor(idx)] if isinstance(inputs, torch.Tensor) else inputs[idx]
    return [inputs[i] for i in idx]


def classification_loss(out: tuple[torch.Tensor, torch.Tensor], target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the logits (second output) against integer labels."""
    return F.cross_entropy(out[1], target)


def reconstruction_loss(out: tuple[torch.Tensor, torch.Tensor], target: torch.Tensor) -> torch.Tensor:
    """Mean squared error of the reconstruction (second output) against the clean input."""
    return F.mse_loss(out[1], target)


def fit(model: nn.Module, inputs: Batchable, targets: torch.Tensor, loss: Callable, epochs: int,
        lr: float = 1e-3, batch_size: int = 128, seed: int = 0, desc: str = "training") -> nn.Module:
    """Adam on shuffled mini-batches for `epochs` epochs; returns the model in eval mode."""
    from tqdm.auto import tqdm

    gen = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.to(device())
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    n = len(inputs)
    for _ in tqdm(range(epochs), desc=desc, leave=False):
        order = gen.permutation(n)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            opt.zero_grad()
            loss(model(on_device(take(inputs, idx), model)), on_device(take(targets, idx), model)).backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def predict(model: nn.Module, inputs: Batchable, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(features, second output) of an eval-mode model over all inputs, as float64 arrays."""
    model.to(device()).eval()
    feats, outs = [], []
    for start in range(0, len(inputs), batch_size):
        f, o = model(on_device(take(inputs, np.arange(start, min(start + batch_size, len(inputs)))), model))
        feats.append(f.double().cpu().numpy())
        outs.append(o.double().cpu().numpy())
    return np.concatenate(feats), np.concatenate(outs)


def input_digest(*parts: Any) -> str:
    """Short SHA-256 over arrays, tensors, lists and scalars: the cache key of a trained model."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, torch.Tensor):
            part = part.numpy()
        if isinstance(part, np.ndarray):
            digest.update(str((part.dtype, part.shape)).encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        else:
            digest.update(json.dumps(part, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def weights_path(name: str, model: nn.Module, key: str) -> Path:
    """Where cached_fit keeps the weights of `model` trained on inputs digested as `key`."""
    return data_dir() / "models" / f"{name}-{key}-{input_digest(repr(model))[:8]}.pt"


def cached_fit(name: str, model: nn.Module, key: str, train: Callable[[nn.Module], nn.Module]) -> nn.Module:
    """Load `model`'s weights from weights_path(), or train it and save them atomically."""
    path = weights_path(name, model, key)
    if path.exists():
        model.load_state_dict(torch.load(path, weights_only=True, map_location="cpu"))
        return model.eval()
    model = train(model)
    with atomic_path(path) as tmp:
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, tmp)
    return model.eval()
