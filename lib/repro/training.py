"""One generic training loop and batched prediction, shared by the chapters' small torch models."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

Batchable = torch.Tensor | np.ndarray | Sequence[Any]


def device() -> torch.device:
    """The GPU when one is visible (the paper profile), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def training_precision(bf16: bool = True) -> str:
    """The precision a training run uses: "bf16 mixed" only on a GPU with native bf16, else "float32".

    On CPU every chapter trains in float32, whatever the CPU: bf16 autocast changes the numbers (so the book's
    `default` tables would depend on which CPU built them) and, on CPUs without native bf16 (AVX2-only), it runs
    about 16x slower than float32 per step. Every training path asks here; none enables autocast by itself."""
    return "bf16 mixed" if bf16 and torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"


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


def fit(
    model: nn.Module,
    inputs: Batchable,
    targets: torch.Tensor,
    loss: Callable,
    epochs: int,
    lr: float = 1e-3,
    batch_size: int = 128,
    seed: int = 0,
    desc: str = "training",
    optimizer: str = "adam",
    lengths: Sequence[int] | None = None,
) -> nn.Module:
    """Adam (or SGD with Nesterov momentum 0.9, optimizer="sgd-nesterov") on shuffled mini-batches; eval mode after.
    With `lengths` (texts), each batch holds inputs of similar length (length_batches), so that it pads little."""
    from tqdm.auto import tqdm

    gen = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.to(device())
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer not in ("adam", "sgd-nesterov"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd-nesterov', got {optimizer!r}")
    opt = (
        torch.optim.Adam(params, lr=lr)
        if optimizer == "adam"
        else torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True)
    )
    model.train()
    n = len(inputs)
    for _ in tqdm(range(epochs), desc=desc, leave=False):
        order = gen.permutation(n)
        batches = (
            [order[s : s + batch_size] for s in range(0, n, batch_size)]
            if lengths is None
            else length_batches(np.asarray(lengths), batch_size, gen)
        )
        for idx in batches:
            opt.zero_grad()
            loss(model(on_device(take(inputs, idx), model)), on_device(take(targets, idx), model)).backward()
            opt.step()
    return model.eval()


def length_batches(lengths: np.ndarray, batch_size: int, gen: np.random.Generator, pool: int = 50) -> list[np.ndarray]:
    """Every index once, in batches of similar length: a random permutation cut into pools of `pool` batches, each
    pool sorted by length and cut into batches, the batches then shuffled (a bucket iterator)."""
    order = gen.permutation(len(lengths))
    batches = []
    for start in range(0, len(order), batch_size * pool):
        chunk = order[start : start + batch_size * pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[s : s + batch_size] for s in range(0, len(chunk), batch_size)]
    return [batches[i] for i in gen.permutation(len(batches))]


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
