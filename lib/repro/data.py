"""Datasets: offline copies installed from package registries, and the Hub path for the paper profile."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)


class MissingDataError(FileNotFoundError):
    """A local data file or model is absent; the message names the command that provides it."""


def read_idx(path: str | Path) -> np.ndarray:
    """Read a (gzipped) IDX file, the MNIST family's format, into a NumPy array."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _fashion_mnist_local(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST from the Debian package dataset-fashion-mnist."""
    prefix = "train" if split == "train" else "t10k"
    images = FASHION_MNIST_DIR / f"{prefix}-images-idx3-ubyte.gz"
    labels = FASHION_MNIST_DIR / f"{prefix}-labels-idx1-ubyte.gz"
    if not images.exists() or not labels.exists():
        raise MissingDataError(
            f"Fashion-MNIST not found under {FASHION_MNIST_DIR}: run `make data` "
            "(installs the Debian package dataset-fashion-mnist), or use source='hub' with network access"
        )
    return read_idx(images), read_idx(labels).astype(np.int64)


def _fashion_mnist_hub(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST from the Hugging Face Hub (`fashion_mnist`)."""
    return _hub_images("fashion_mnist", split)


def fashion_mnist(split: str = "train", source: str = "local") -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST images (n, 28, 28) uint8 and labels; source 'local' (Debian) or 'hub'."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if source == "local":
        return _fashion_mnist_local(split)
    if source == "hub":
        return _fashion_mnist_hub(split)
    raise ValueError(f"source must be 'local' or 'hub', got {source!r}")


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits: images (1797, 8, 8) float in [0, 16] and labels."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.images, bunch.target.astype(np.int64)


# Hub ids and (image column, label column) of the DeepGini chapter's datasets at the `paper` profile.
HUB_IMAGE_SETS = {
    "mnist": ("ylecun/mnist", None, "image", "label"),
    "fashion_mnist": ("zalando-datasets/fashion_mnist", None, "image", "label"),
    "cifar10": ("uoft-cs/cifar10", None, "img", "label"),
    "svhn": ("ufldl-stanford/svhn", "cropped_digits", "image", "label"),
}


def _hub_images(name: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (n, H, W[, C]) uint8 and labels of one HUB_IMAGE_SETS dataset through datasets.load_dataset."""
    from datasets import load_dataset

    repo, config, image_col, label_col = HUB_IMAGE_SETS[name]
    ds = load_dataset(repo, config, split=split)
    images = np.stack([np.asarray(im, dtype=np.uint8) for im in ds[image_col]])
    return images, np.asarray(ds[label_col], dtype=np.int64)


def _channels_first(images: np.ndarray, scale: float) -> np.ndarray:
    """(n, H, W[, C]) images as float32 (n, C, H, W) divided by `scale`."""
    x = images.astype(np.float32) / scale
    return x[:, None] if x.ndim == 3 else np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def image_dataset(name: str, split: str, source: str = "local", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Images as float32 (n, C, H, W) in [0, 1] and labels: 'digits' (seeded 70/30 split), Fashion-MNIST or a Hub set."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if name == "digits":
        images, labels = digits()
        idx = np.random.default_rng(seed).permutation(len(labels))
        cut = int(0.7 * len(idx))
        idx = idx[:cut] if split == "train" else idx[cut:]
        return _channels_first(images[idx], 16.0), labels[idx]
    if name == "fashion_mnist" and source == "local":
        images, labels = fashion_mnist(split)
        return _channels_first(images, 255.0), labels
    if name not in HUB_IMAGE_SETS:
        raise ValueError(f"unknown dataset {name!r}: pass digits or one of {', '.join(HUB_IMAGE_SETS)}")
    if source != "hub":
        raise MissingDataError(f"{name} is only available from the Hub: set source='hub' (paper profile)")
    images, labels = _hub_images(name, split)
    return _channels_first(images, 255.0), labels
