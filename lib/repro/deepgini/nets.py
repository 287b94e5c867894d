"""Classifiers of the DeepGini pairs (LeNet-1, LeNet-5, ResNet-20, VGG-16), trained and cached, and their activations."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .. import cache
from ..training import device, fit

__all__ = ["MODELS", "build", "fine_tune", "neuron_activations", "predict_proba", "train_cached"]


class Net(nn.Module):
    """A classifier whose `neurons(x)` returns one (n, units) matrix per ReLU layer."""

    def __init__(self, blocks: list[nn.Module], head: nn.Module):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.head = head

    def trace(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits and per-block neuron values (conv feature maps reduced to their spatial mean)."""
        acts = []
        for block in self.blocks:
            x = block(x)
            acts.append(x.mean(dim=(2, 3)) if x.dim() == 4 else x)
        return self.head(x), acts

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, without the neuron summaries `trace` computes (a softmax score needs none of them: the chapter's
        cost rows time each method's own forward pass)."""
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class MaxPool2(nn.MaxPool2d):
    """2x2 max pooling, stride 2 (odd sizes floored). Without gradients (predictions, activations) it takes two
    elementwise maxima of strided slices: the same values as torch's max_pool2d, about 10x faster on this project's
    CPUs, where that kernel took as long as the convolutions in the chapter's profile. With gradients (training,
    attacks) it is torch's kernel: its backward is twice as fast as the maxima's."""

    def __init__(self) -> None:
        super().__init__(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Max over each 2x2 window."""
        if torch.is_grad_enabled() and x.requires_grad:
            return super().forward(x)
        h, w = x.shape[-2] // 2 * 2, x.shape[-1] // 2 * 2
        x = x[..., :h, :w]
        rows = torch.maximum(x[..., 0::2, :], x[..., 1::2, :])
        return torch.maximum(rows[..., 0::2], rows[..., 1::2])


def _conv(cin: int, cout: int, pool: bool) -> nn.Sequential:
    """5x5 'same' convolution, ReLU, optional 2x2 max pooling."""
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, 5, padding=2), nn.ReLU()]
    return nn.Sequential(*layers, MaxPool2()) if pool else nn.Sequential(*layers)


def lenet1(channels: int, side: int, classes: int) -> Net:
    """LeNet-1: conv 4 maps, pool, conv 12 maps, pool, dense softmax."""
    flat = 12 * (side // 4) ** 2
    return Net([_conv(channels, 4, True), _conv(4, 12, True)], nn.Sequential(nn.Flatten(), nn.Linear(flat, classes)))


def lenet5(channels: int, side: int, classes: int) -> Net:
    """LeNet-5: conv 6, pool, conv 16, pool, dense 120, dense 84, dense softmax."""
    flat = 16 * (side // 4) ** 2
    dense1 = nn.Sequential(nn.Flatten(), nn.Linear(flat, 120), nn.ReLU())
    return Net(
        [_conv(channels, 6, True), _conv(6, 16, True), dense1, nn.Sequential(nn.Linear(120, 84), nn.ReLU())],
        nn.Linear(84, classes),
    )


class _Residual(nn.Module):
    """Basic residual block of ResNet-20 (two 3x3 convolutions, identity or 1x1 shortcut)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = (
            nn.Identity()
            if stride == 1 and cin == cout
            else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """ReLU(body(x) + shortcut(x))."""
        return torch.relu(self.body(x) + self.skip(x))


def resnet20(channels: int, side: int, classes: int) -> Net:
    """ResNet-20 (He et al. 2016, CIFAR variant): 3 stages of 3 blocks, 16/32/64 maps."""
    blocks: list[nn.Module] = [
        nn.Sequential(nn.Conv2d(channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
    ]
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(3):
            blocks.append(_Residual(cin, cout, stride if i == 0 else 1))
            cin = cout
    return Net(blocks, nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes)))


def vgg16(channels: int, side: int, classes: int) -> Net:
    """VGG-16 with batch norm for 32x32 inputs: 13 conv layers, then dense 512 and softmax."""
    plan = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    blocks: list[nn.Module] = []
    cin = channels
    for i, v in enumerate(plan):
        if v == "M":
            continue
        pool = i + 1 < len(plan) and plan[i + 1] == "M"
        layers = [nn.Conv2d(cin, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU()]
        blocks.append(nn.Sequential(*layers, MaxPool2()) if pool else nn.Sequential(*layers))
        cin = v
    flat = 512 * (side // 32) ** 2
    blocks.append(nn.Sequential(nn.Flatten(), nn.Linear(flat, 512), nn.ReLU()))
    return Net(blocks, nn.Linear(512, classes))


MODELS = {"lenet1": lenet1, "lenet5": lenet5, "resnet20": resnet20, "vgg16": vgg16}


# the memory layout of every model's weights (so of its feature maps): channels last. On this project's CPUs a LeNet
# training step takes 5.4 ms in it against 8.3 ms in torch's default layout (LeNet-5: 7.3 against 10.1), and an input
# gradient on 4,000 images (the attacks' step) 345 ms against 628 ms: torch's max pooling with indices is slow in the
# default layout. The values differ from the default layout's in the last bits (another summation order), so the
# layout is part of every cached model's key.
LAYOUT = torch.channels_last


def build(name: str, shape: tuple[int, int, int], classes: int, seed: int) -> Net:
    """Fresh model `name` for inputs of shape (channels, side, side), initialized from `seed`, in LAYOUT."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: pass one of {', '.join(MODELS)}")
    torch.manual_seed(seed)
    return MODELS[name](shape[0], shape[1], classes).to(device(), memory_format=LAYOUT)


def _batches(n: int, batch: int) -> list[np.ndarray]:
    """Consecutive index batches over n items."""
    return [np.arange(s, min(s + batch, n)) for s in range(0, n, batch)]


def _logits_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of a classifier's logits against integer labels."""
    return nn.functional.cross_entropy(logits, target)


# name -> (optimizer, learning rate, batch size): ours, and the artifact's Keras recipe (SGD 0.01, momentum 0.9, Nesterov,
# batch 64; its 1e-6 learning-rate decay is left out)
RECIPES = {"adam": ("adam", 1e-3, 128), "artifact": ("sgd-nesterov", 0.01, 64)}


def _fit(
    model: Net, x: np.ndarray, y: np.ndarray, epochs: int, recipe: str, seed: int, desc: str, lr: float | None = None
) -> Net:
    """Cross-entropy training with one of RECIPES, through the shared training loop."""
    optimizer, default_lr, batch = RECIPES[recipe]
    xt, yt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)
    return fit(
        model,
        xt,
        yt,
        _logits_loss,
        epochs,
        lr=lr or default_lr,
        batch_size=batch,
        seed=seed,
        desc=desc,
        optimizer=optimizer,
    )


def train_cached(
    name: str, x: np.ndarray, y: np.ndarray, classes: int, epochs: int, seed: int, recipe: str = "adam"
) -> tuple[Net, bool]:
    """Train model `name` on (x, y) with a recipe of RECIPES, or load its cached weights; (model, was_cached)."""
    model, config = _untrained(name, x, classes, epochs, seed, recipe)
    train = lambda m: _fit(m, x, y, epochs, recipe, seed, f"train {name}")
    model, was_cached = cache.weights(f"deepgini-{name}", model, train, x, y, config)
    return model.to(device()), was_cached


def is_trained(name: str, x: np.ndarray, y: np.ndarray, classes: int, epochs: int, seed: int, recipe: str) -> bool:
    """Whether train_cached would load these weights from the cache instead of training them."""
    model, config = _untrained(name, x, classes, epochs, seed, recipe)
    return cache.weights_path(f"deepgini-{name}", model, x, y, config).exists()


def _untrained(name: str, x: np.ndarray, classes: int, epochs: int, seed: int, recipe: str) -> tuple[Net, dict]:
    """The model before training and the settings its cached weights are keyed by."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}, got {recipe!r}")
    model = build(name, x.shape[1:], classes, seed)
    config = {"name": name, "classes": classes, "epochs": epochs, "seed": seed, "torch": torch.__version__,
              "layout": str(LAYOUT)}  # fmt: skip
    if recipe == "adam":
        config["lr"] = RECIPES["adam"][1]  # the key the Adam-trained weights were cached under
    else:
        config["recipe"] = RECIPES[recipe]
    return model, config


def fine_tune(model: Net, x: np.ndarray, y: np.ndarray, epochs: int, seed: int, lr: float = 5e-4) -> Net:
    """A copy of `model` trained further on (x, y); the original is untouched. Cached under data/models by the
    starting weights, the data and the recipe: a re-run (a scoring parameter changed, the cached book) loads every
    retraining run, chained ones too, instead of training it again."""
    import copy

    start = cache.model_digest(model)
    config = {"epochs": epochs, "seed": seed, "lr": lr, "torch": torch.__version__, "layout": str(LAYOUT)}
    tune = lambda m: _fit(m, x, y, epochs, "adam", seed, "fine-tune", lr=lr)
    return cache.weights("deepgini-fine-tune", copy.deepcopy(model), tune, start, x, y, config)[0].to(device())


@torch.no_grad()
def predict_proba(model: Net, x: np.ndarray, batch: int = 1024) -> np.ndarray:
    """Softmax probabilities, float64."""
    xt = torch.as_tensor(x, dtype=torch.float32)
    out = [torch.softmax(model(xt[b].to(device())), dim=1).cpu() for b in _batches(len(x), batch)]
    return torch.cat(out).double().numpy()


def traces(model: Net, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """One pass: the softmax, our layer set (`Net.trace`: every block's output, conv maps reduced to their spatial
    mean) and the artifact's (artifact_trace). The same operations as each alone, so the same values."""
    ours, theirs = [], []
    for block in model.blocks:
        if isinstance(block, nn.Sequential) and isinstance(block[-1], nn.MaxPool2d):
            x = block[:-1](x)
            theirs.append(x.mean(dim=(2, 3)))
            x = block[-1](x)
        else:
            x = block(x)
        values = x.mean(dim=(2, 3)) if x.dim() == 4 else x
        ours.append(values)
        theirs.append(values)
    probs = torch.softmax(model.head(x), dim=1)
    return probs, ours, [*theirs, probs]


def artifact_trace(model: Net, x: torch.Tensor) -> list[torch.Tensor]:
    """Neuron values over the layers the artifact's Keras models expose to coverage: every ReLU map before and
    after its max pooling (two layers), every dense ReLU layer, and the softmax output (conv maps reduced to their
    spatial mean). LeNet-1 on 28x28 images: 4 + 4 + 12 + 12 + 10 = 42 units, where `Net.trace` gives 16."""
    return traces(model, x)[2]


LAYER_SETS = {"ours": lambda model, x: model.trace(x)[1], "artifact": artifact_trace}


@torch.no_grad()
def outputs(
    model: Net, x: np.ndarray, batch: int = 1024
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """From one forward pass: what predict_proba, neuron_activations (layers "ours") and neuron_activations
    (layers "artifact") give, in that order (softmax; our activations and their layer index; the artifact's and
    theirs), with the same values (tests/test_coverage.py)."""
    xt = torch.as_tensor(x, dtype=torch.float32)
    probs, ours, theirs = [], [], []
    for b in _batches(len(x), batch):
        p, o, t = traces(model, xt[b].to(device()))
        probs.append(p.cpu())
        ours.append(torch.cat(o, dim=1).cpu())
        theirs.append(torch.cat(t, dim=1).cpu())
    _, o, t = traces(model, xt[:1].to(device()))
    layer = lambda parts: np.concatenate([np.full(a.shape[1], i) for i, a in enumerate(parts)])
    return (torch.cat(probs).double().numpy(), torch.cat(ours).double().numpy(), layer(o),
            torch.cat(theirs).double().numpy(), layer(t))  # fmt: skip


@torch.no_grad()
def neuron_activations(
    model: Net, x: np.ndarray, batch: int = 1024, layers: str = "ours"
) -> tuple[np.ndarray, np.ndarray]:
    """(tests x neurons) activation matrix and the layer index of each neuron. `layers`: "ours" (the output of
    every ReLU block, after pooling) or "artifact" (see artifact_trace)."""
    if layers not in LAYER_SETS:
        raise ValueError(f"layers must be one of {', '.join(LAYER_SETS)}, got {layers!r}")
    trace = LAYER_SETS[layers]
    xt = torch.as_tensor(x, dtype=torch.float32)
    chunks = [torch.cat(trace(model, xt[b].to(device())), dim=1).cpu() for b in _batches(len(x), batch)]
    sizes = trace(model, xt[:1].to(device()))
    layer = np.concatenate([np.full(a.shape[1], i) for i, a in enumerate(sizes)])
    return torch.cat(chunks).double().numpy(), layer
