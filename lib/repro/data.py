"""Datasets: offline copies installed from package registries, and the Hub path for the paper profile."""

from __future__ import annotations

import gzip
import os
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
    from datasets import load_dataset

    ds = load_dataset("zalando-datasets/fashion_mnist", split=split)
    images = np.stack([np.asarray(im, dtype=np.uint8) for im in ds["image"]])
    return images, np.asarray(ds["label"], dtype=np.int64)


def fashion_mnist(split: str = "train", source: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST images (n, 28, 28) uint8 and labels; source 'local' (Debian), 'hub' or 'auto'."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if source not in ("auto", "local", "hub"):
        raise ValueError(f"source must be 'auto', 'local' or 'hub', got {source!r}")
    if source == "auto":
        installed = (FASHION_MNIST_DIR / "t10k-labels-idx1-ubyte.gz").exists()
        source = "local" if installed or os.environ.get("HF_DATASETS_OFFLINE") == "1" else "hub"
        if source == "hub":
            print(f"Fashion-MNIST is not installed under {FASHION_MNIST_DIR} (Debian package "
                  "dataset-fashion-mnist, `make data`); loading it from the Hugging Face Hub instead.")
    return _fashion_mnist_local(split) if source == "local" else _fashion_mnist_hub(split)


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits: images (1797, 8, 8) float in [0, 16] and labels."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.images, bunch.target.astype(np.int64)
