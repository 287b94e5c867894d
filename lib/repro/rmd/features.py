"""The RMD chapter's inputs and features: directions between class groups, and cached label-free and fine-tuned models."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from .. import cache, data, pretrained, training
from . import nets, scores

T = TypeVar("T")


@dataclass
class Direction:
    """One in-distribution / OOD pair of class groups with its raw inputs (labels renumbered 0..K-1)."""

    setting: str
    modality: str  # "image" or "text"
    in_dist: str
    ood: str
    train_x: Any
    train_y: np.ndarray
    ood_train_x: Any
    ood_train_y: np.ndarray
    test_in_x: Any
    test_in_y: np.ndarray
    test_ood_x: Any
    test_ood_class: np.ndarray  # the original class name of each OOD test row
    in_classes: tuple[str, ...] = ()
    test_units: np.ndarray | None = None  # the cluster of each test row (in-distribution first), None: independent
    unit: str = "items"  # what the clusters are ("tasks", "articles"); "items" when the test rows are independent

    @property
    def n_classes(self) -> int:
        """K, the number of in-distribution classes."""
        return int(self.train_y.max()) + 1

    @property
    def is_ood(self) -> np.ndarray:
        """Labels of the test rows (in-distribution first): 1 = OOD."""
        return np.r_[np.zeros(len(self.test_in_y)), np.ones(len(self.test_ood_class))].astype(int)

    @cached_property
    def test_digest(self) -> str:
        """The digest of the test rows (inputs, classes, clusters): two draws with the same digest share their rows."""
        return cache.digest(self.test_in_x, self.test_in_y, self.test_ood_x, self.test_ood_class, self.test_units)


def both_ways(
    setting: str,
    modality: str,
    names: Sequence[str],
    train: tuple[Any, np.ndarray],
    test: tuple[Any, np.ndarray],
    groups: Mapping[str, Sequence[int]],
    both: bool = True,
    units: tuple[str, np.ndarray] | None = None,
) -> list[Direction]:
    """Directions A -> B (and B -> A when `both`) of a two-group split of (train, test) inputs and labels; `units`
    (what the clusters are, the cluster of every test input) where the test inputs come in clusters."""
    (a_name, a), (b_name, b) = groups.items()
    pairs = [((a_name, a), (b_name, b)), ((b_name, b), (a_name, a))][: 2 if both else 1]
    out = []
    for (in_name, ind), (ood_name, oodc) in pairs:
        tr, tr_y = data.select_classes(train[1], ind)
        otr, otr_y = data.select_classes(train[1], oodc)
        te_in, te_in_y = data.select_classes(test[1], ind)
        te_ood, _ = data.select_classes(test[1], oodc)
        out.append(
            Direction(
                setting,
                modality,
                in_name,
                ood_name,
                training.take(train[0], tr),
                tr_y,
                training.take(train[0], otr),
                otr_y,
                training.take(test[0], te_in),
                te_in_y,
                training.take(test[0], te_ood),
                np.asarray([names[c] for c in test[1][te_ood]]),
                tuple(names[c] for c in sorted(ind)),
                None if units is None else np.r_[np.asarray(units[1])[te_in], np.asarray(units[1])[te_ood]],
                "items" if units is None else units[0],
            )
        )
    return out


@dataclass(frozen=True)
class Budget:
    """What the models are trained with: widths, epochs and the sources of the pretrained encoders."""

    feat_dim: int
    cnn_epochs: int
    ae_epochs: int
    text_epochs: int
    image_source: str
    text_encoder: str | Path
    text_train_top: int = 0  # the text encoder's last layers trained in fine-tuning (0: all)
    text_lr: float = 5e-5
    cnn_lr: float = 1e-3  # Adam's default


VALIDATION_SHARE = 0.2  # of each class's training rows, held out to choose a fine-tuning learning rate


@dataclass
class Feats:
    """Features of one direction under one feature type and seed."""

    train: np.ndarray
    ood_train: np.ndarray
    test: np.ndarray  # in-distribution test rows first, then OOD rows
    logits: np.ndarray  # classifier logits of the test rows (for MSP)
    accuracy: float  # in-distribution test accuracy of that classifier
    train_y: np.ndarray  # labels of the training rows (this seed's draw)
    ood_train_y: np.ndarray  # original labels of the OOD classes' training rows (this seed's draw)


def seeded_init(make: Callable[[], T], seed: int) -> T:
    """`make()` with torch's global generator seeded by `seed` (then restored): a model's initial weights depend on
    its seed alone, not on what ran before it (another model trained, or loaded from the cache and so not trained)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def label_free_image_encoder(images: torch.Tensor, budget: Budget, seed: int) -> Any:
    """The image encoder that never saw a label: a denoising auto-encoder ("local") or ViT-B/16 in21k ("hub")."""
    if budget.image_source == "hub":
        return seeded_init(lambda: pretrained.EncoderClassifier(pretrained.VIT_IN21K_HUB, 1, "image"), seed)
    return cache.weights(
        "fmnist-dae",
        seeded_init(lambda: nets.ConvAutoencoder(budget.feat_dim), seed),
        lambda m: training.fit(
            m,
            images,
            images,
            training.reconstruction_loss,
            budget.ae_epochs,
            seed=seed,
            desc=f"auto-encoder, seed {seed}",
        ),
        images,
        budget.feat_dim,
        budget.ae_epochs,
        seed,
    )[0]


def uses_encoder(d: Direction, budget: Budget) -> bool:
    """Whether direction d is modelled by a transformers encoder rather than the small CNN."""
    return d.modality == "text" or (budget.image_source == "hub" and d.setting == "image-near")


def finetuned_model(d: Direction, budget: Budget, seed: int, note: str = "") -> Any:
    """A classifier trained on d's in-distribution classes only, one per seed (cached under data/models/); `note`
    is shown in its progress line."""
    y = torch.as_tensor(d.train_y)
    desc = f"fine-tune on {d.in_dist[:30]}, seed {seed}{note}"
    if not uses_encoder(d, budget):
        lr = budget.cnn_lr
        return cache.weights(
            "cnn",
            seeded_init(lambda: nets.SmallCNN(d.n_classes, budget.feat_dim), seed),
            lambda m: training.fit(
                m, d.train_x, y, training.classification_loss, budget.cnn_epochs, lr=lr, seed=seed, desc=desc
            ),
            d.train_x,
            d.train_y,
            budget.feat_dim,
            budget.cnn_epochs,
            seed,
            *([f"lr {lr:g}"] if lr != 1e-3 else []),  # keys of old entries kept
        )[0]
    name = budget.text_encoder if d.modality == "text" else pretrained.VIT_IN21K_HUB
    epochs = budget.text_epochs if d.modality == "text" else budget.cnn_epochs
    top, lr = (budget.text_train_top, budget.text_lr) if d.modality == "text" else (0, 5e-5)
    variant = ([f"top {top} layers"] if top else []) + (
        [f"lr {lr:g}"] if lr != 5e-5 else []
    )  # keys of old entries kept
    inputs = list(d.train_x) if d.modality == "text" else d.train_x
    lengths = [len(x) for x in inputs] if d.modality == "text" else None  # batches of similar length pad little
    return cache.weights(
        f"{d.modality}-encoder",
        seeded_init(lambda: pretrained.EncoderClassifier(name, d.n_classes, d.modality, train_top=top), seed),
        lambda m: training.fit(
            m,
            d.train_x,
            y,
            training.classification_loss,
            epochs,
            lr=lr,
            batch_size=32,
            seed=seed,
            desc=desc,
            lengths=lengths,
        ),
        str(name),
        inputs,
        d.train_y,
        epochs,
        seed,
        "length-batches",
        *variant,
    )[0]


@dataclass
class Embedder:
    """Runs a frozen model over inputs, remembering each text's output (the label-free text encoder is shared)."""

    model: Any
    memo: dict[str, tuple[np.ndarray, np.ndarray]] | None = field(default_factory=dict)
    _key: str = field(default="", repr=False)

    @property
    def key(self) -> str:
        """What identifies the model's weights (cache.model_key, computed once): the features' cache key with their
        inputs."""
        if not self._key:
            self._key = cache.model_key(self.model)
        return self._key

    def __call__(self, inputs: Any) -> tuple[np.ndarray, np.ndarray]:
        """(features, second output) of every input; texts run in order of length, so that a batch pads little."""
        if not isinstance(inputs, list):
            return training.predict(self.model, inputs, 64)
        if self.memo is None:
            order = sorted(range(len(inputs)), key=lambda i: (len(inputs[i]), i))
            feats, outs = training.predict(self.model, [inputs[i] for i in order], 64)
            back = np.argsort(order)
            return feats[back], outs[back]
        todo = sorted({t for t in inputs if t not in self.memo}, key=lambda t: (len(t), t))
        if todo:
            self.memo.update(zip(todo, zip(*training.predict(self.model, todo, 64))))
        return tuple(np.stack([self.memo[t][j] for t in inputs]) for j in (0, 1))


def label_free_text_encoder(budget: Budget) -> Embedder:
    """The frozen text encoder that never saw a label, shared by every seed. Its unused one-class head is drawn from a
    fixed seed: the features' cache key digests the whole model, and a head drawn from whatever state the generator
    was left in (models trained in a cold run, loaded in a cached one) would miss every cached feature."""
    return Embedder(seeded_init(lambda: pretrained.EncoderClassifier(budget.text_encoder, 1, "text"), 0))


def extract(d: Direction, embed: Embedder, probe_seed: int | None = None) -> Feats:
    """Features of d's rows; with probe_seed (the label-free case), logits from a logistic probe on the training
    features and the OOD classes' training rows, which CLP's probes need (fine-tuned features skip them)."""
    probe = probe_seed is not None
    test_x = training.concat(d.test_in_x, d.test_ood_x)

    def run() -> dict[str, np.ndarray]:
        train = embed(d.train_x)[0]
        ood_train = embed(d.ood_train_x)[0] if probe else np.empty((0, train.shape[1]))
        test, logits = embed(test_x)
        return {"train": train, "ood_train": ood_train, "test": test, "logits": logits}

    # cached by the model's weights and the inputs: a re-run (an exercise that changes a scoring parameter, the
    # cached book) reads the features instead of running the encoders again over every input
    ood_x = d.ood_train_x if probe else None
    where = cache.entry_path("features", f"rmd-{d.modality}", embed.key, d.train_x, ood_x, test_x, suffix=".npz")
    found, _ = cache.arrays_entry(where, run)
    train, ood_train, test, logits = (found[k] for k in ("train", "ood_train", "test", "logits"))
    if probe_seed is not None:  # lbfgs does not draw: the probe depends on the features and labels alone, so its
        # entry is keyed by them (a seed with the same training draw reads it)
        fit = lambda: {"logits": scores.linear_probe(train, d.train_y, probe_seed).predict_log_proba(test)}
        probe_at = cache.entry_path(
            "features", f"rmd-{d.modality}-probe", embed.key, where.name, d.train_y, suffix=".npz"
        )
        logits = cache.arrays_entry(probe_at, fit)[0]["logits"]
    n_in = len(d.test_in_y)
    accuracy = float((logits[:n_in].argmax(axis=1) == d.test_in_y).mean())
    return Feats(train, ood_train, test, logits, accuracy, d.train_y, d.ood_train_y)


def rate_field(d: Direction, budget: Budget) -> str | None:
    """The Budget field that holds the learning rate of d's fine-tuned model: "text_lr", "cnn_lr", or None (the
    Hub's ViT, fine-tuned at its fixed 5e-5)."""
    if d.modality == "text":
        return "text_lr"
    return None if uses_encoder(d, budget) else "cnn_lr"


def validation_split(y: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held-out) row indices: `share` of each class's rows (at least one, never all) held out, drawn by seed."""
    rng = np.random.default_rng(seed)
    held = []
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        held.extend(rows[: min(len(rows) - 1, max(1, round(share * len(rows))))])
    held = np.sort(np.asarray(held, dtype=int))
    return np.setdiff1d(np.arange(len(y)), held), held


def validation_accuracy(d: Direction, budget: Budget, seed: int) -> float:
    """Accuracy on held-out training rows (validation_split, VALIDATION_SHARE) of d's classifier trained on the rest:
    how a learning rate is chosen without looking at the test rows."""
    kept, held = validation_split(d.train_y, VALIDATION_SHARE, seed)
    part = replace(d, train_x=training.take(d.train_x, kept), train_y=d.train_y[kept])
    model = finetuned_model(part, budget, seed, note=f", validation at lr {getattr(budget, rate_field(d, budget)):g}")
    held_x = training.take(d.train_x, held)

    def score() -> dict[str, np.ndarray]:
        logits = Embedder(model, None)(held_x)[1]
        return {"accuracy": np.asarray((logits.argmax(axis=1) == d.train_y[held]).mean())}

    # keyed by the weights and the held-out rows: a cached re-run reads it instead of running the model again
    where = cache.entry_path(
        "features", "rmd-validation", cache.model_key(model), held_x, d.train_y[held], suffix=".npz"
    )
    return float(cache.arrays_entry(where, score)[0]["accuracy"])


def tuned_rates(d: Direction, budget: Budget, seed: int, grid: Sequence[float], walk: int = 2) -> dict[float, float]:
    """Validation accuracy at every learning rate tried for d's fine-tuned model: the rates of `grid`, then, while
    the best lies at an end of those tried, one more step beyond that end (the grid's ratio there; at most `walk`
    steps), so that the rate chosen is interior wherever the walk allows. One rate: nothing to choose, no fits."""
    rates = sorted(grid)
    if len(rates) < 2:
        return {rates[0]: float("nan")}
    field_name = rate_field(d, budget)
    tried = {r: validation_accuracy(d, replace(budget, **{field_name: r}), seed) for r in rates}
    low_step, high_step = rates[1] / rates[0], rates[-1] / rates[-2]
    for _ in range(walk):
        best, ends = best_rate(tried), (min(tried), max(tried))
        if best not in ends:
            break
        step = best / low_step if best == ends[0] else best * high_step
        tried[step] = validation_accuracy(d, replace(budget, **{field_name: step}), seed)
    return dict(sorted(tried.items()))


def best_rate(tried: Mapping[float, float]) -> float:
    """The rate of highest validation accuracy (ties: the smallest rate); a lone untried rate is itself."""
    return min(tried, key=lambda r: (-np.nan_to_num(tried[r], nan=-1.0), r))
