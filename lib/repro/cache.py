"""One digest-and-store cache for everything the book computes once: results, weights, checkpoints, adversarial sets.

An entry is a file or a folder whose name carries a digest of every input that determines it. It is
built in a temporary path beside its final place and renamed into place only when complete, so a
crash or Ctrl-C never leaves a half-written entry. An entry that cannot be read back (truncated,
corrupted) is discarded and built again.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import pickle
import platform
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .atomic import atomic_path
from .paths import data_dir

T = TypeVar("T")
# Errors that mean "this entry is damaged", not "the code is wrong".
DAMAGED = (OSError, EOFError, ValueError, KeyError, RuntimeError, json.JSONDecodeError, zipfile.BadZipFile,
           pickle.UnpicklingError)  # fmt: skip


def _update(digest: Any, part: Any) -> None:
    """Feed one part (array, tensor, path, or JSON-able value) into a running SHA-256."""
    if type(part).__module__.startswith("torch") and hasattr(part, "numpy"):
        part = part.detach().cpu().numpy()
    elif type(part).__module__.startswith("pandas") and hasattr(part, "columns"):  # a table: every cell, not its repr
        import pandas as pd

        digest.update(json.dumps([str(c) for c in part.columns]).encode())
        part = pd.util.hash_pandas_object(part, index=False).to_numpy()
    if isinstance(part, np.ndarray):
        digest.update(str((part.dtype, part.shape)).encode())
        digest.update(np.ascontiguousarray(part).tobytes())
    elif isinstance(part, Path):
        digest.update(str(part).encode())
        if part.is_file():
            digest.update(part.read_bytes())
    else:
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())


def digest(*parts: Any, length: int = 16) -> str:
    """Short SHA-256 over arrays, tensors, files (by content), lists, dicts and scalars."""
    running = hashlib.sha256()
    for part in parts:
        _update(running, part)
    return running.hexdigest()[:length]


@functools.cache
def source_digest(*code: Any) -> str:
    """Digest of the source of `code` (modules, functions), read once per process: an entry computed by that code
    is reused only while the code is unchanged."""
    import inspect

    return digest([inspect.getsource(c) for c in code])


def code_digest(*modules: Any) -> str:
    """Digest of the modules' source and of the package versions the runner records: what the code of a kept step
    (kept) is keyed by, so that a change of either computes it again."""
    from .runner import versions

    return digest(source_digest(*modules), versions())


def model_digest(model: Any) -> str:
    """Digest of a torch module's class and every tensor of its state (its weights and buffers): what its outputs
    depend on besides their inputs."""
    state = model.state_dict()
    names = sorted(state)
    return digest(type(model).__qualname__, names, *(state[k].detach().cpu().float() for k in names))


IDENTITY = "_repro_cache_identity"


def model_key(model: Any) -> str:
    """What identifies a model's weights in a cache key: the identity `mark` gave it (its checkpoint's entry, no
    tensor read), else the digest of its weights (model_digest)."""
    return identity(model) or model_digest(model)


def mark(model: Any, *parts: Any) -> Any:
    """Give `model` an identity digested from `parts` (the inputs that determine its weights, e.g. its checkpoint's
    cache entry), so what is computed from it can be cached by that identity; returns the model."""
    setattr(model, IDENTITY, digest(*parts))
    return model


def identity(model: Any) -> str | None:
    """The identity `mark` gave a model; None for a model whose weights no cache entry determines."""
    return getattr(model, IDENTITY, None)


def model_arrays(
    model: Any, kind: str, name: str, build: Callable[[], dict[str, np.ndarray]], *parts: Any
) -> dict[str, np.ndarray]:
    """Named arrays computed from `model` by `build()`: kept as <data>/<kind>/<name>-<digest>.npz, keyed by the
    model's identity and `parts`, for a model with an identity (mark); computed each time for one without."""
    who = identity(model)
    if who is None:
        return build()
    return arrays_entry(entry_path(kind, name, who, *parts, suffix=".npz"), build)[0]


def kept(kind: str, name: str, build: Callable[[], T], *parts: Any) -> T:
    """The Python value (tables, arrays, dataclasses) `build()` returns, pickled at <data>/<kind>/<name>-<digest>.pkl,
    keyed by `parts`: every input that determines it (the code's source_digest, the parameters it reads, the
    identities of the models and sets it takes). A value first built is read back from its entry, so a run that builds
    it and one that reuses it go on with the same value."""

    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:
            pickle.dump(build(), f, protocol=pickle.HIGHEST_PROTOCOL)

    def read(found: Path) -> T:
        with found.open("rb") as f:
            try:
                return pickle.load(f)
            except Exception as err:  # whatever an undecodable pickle raises (a class gone, bad bytes): damaged
                raise ValueError(f"{found.name} cannot be read back: {err!r}") from err

    return file_entry(entry_path(kind, name, *parts, suffix=".pkl"), write, read)[0]


def machine() -> dict[str, Any]:
    """What a timing depends on besides its inputs: the CPU model, the cores this process may use, the threads torch
    computes with and the GPU it would use (none here); a key part of entries that keep measured seconds, so another
    machine measures its own."""
    import torch

    model = platform.processor()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines() if ln.startswith("model name")]
        model = names[0] if names else model
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": model, "cores": cores, "threads": torch.get_num_threads(), "gpu": gpu}


def folder_stamp(folder: Path) -> list[tuple[str, int, int]]:
    """(name, size, mtime) of every file in a model folder: what identifies locally converted weights without
    reading them."""
    return sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in Path(folder).iterdir() if f.is_file())


def arrays_entry(path: Path, build: Callable[[], dict[str, np.ndarray]]) -> tuple[dict[str, np.ndarray], bool]:
    """(arrays, was_cached): the named arrays stored at `path` (an .npz file), else `build()` stored there."""

    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:  # a file object: np.savez would add ".npz" to the temporary name
            np.savez(f, **build())

    def read(found: Path) -> dict[str, np.ndarray]:
        with np.load(found) as stored:
            return {k: stored[k] for k in stored.files}

    return file_entry(path, write, read)


def store(kind: str) -> Path:
    """The folder holding one kind of entry (models, checkpoints, adversarial, ...) under the data directory."""
    return data_dir() / kind


def entry_path(kind: str, name: str, *parts: Any, suffix: str = "") -> Path:
    """Where the entry `name` built from `parts` lives: <data>/<kind>/<name>-<digest><suffix>."""
    return store(kind) / f"{name}-{digest(*parts)}{suffix}"


def _discard(path: Path) -> None:
    """Remove a damaged entry, file or folder."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def file_entry(path: Path, build: Callable[[Path], None], load: Callable[[Path], T]) -> tuple[T, bool]:
    """(value, was_cached): `load(path)` if the entry reads back, else `build(tmp)` atomically, then load."""
    if path.exists():
        try:
            return load(path), True
        except DAMAGED:
            _discard(path)
    with atomic_path(path) as tmp:
        build(tmp)
    return load(path), False


def read_json(path: Path) -> Any:
    """Parse a JSON entry (raises json.JSONDecodeError on a truncated one, which the cache treats as damaged)."""
    return json.loads(path.read_text(encoding="utf-8"))


def clear_leftovers(folder: Path, prefix: str = "") -> int:
    """Remove temporary entries (`.<name>.<random>`) a killed process left in `folder`, only names starting `prefix`."""
    if not folder.is_dir():
        return 0
    removed = 0
    for leftover in folder.glob(f".{glob.escape(prefix)}*.*"):
        _discard(leftover)
        removed += 1
    return removed


def weights_path(name: str, model: Any, *parts: Any) -> Path:
    """Where `weights` keeps the weights of `model` (its architecture as repr gives it) trained on `parts`."""
    return entry_path("models", name, repr(model), *parts, suffix=".pt")


def weights(name: str, model: Any, train: Callable[[Any], Any], *parts: Any) -> tuple[Any, bool]:
    """(model, was_cached): torch `model` with the weights trained by `train(model)` on inputs digested from `parts`,
    marked (mark) by its entry's name, size and modification time: a rebuilt entry is another model."""
    import torch

    path = weights_path(name, model, *parts)

    def build(tmp: Path) -> None:
        trained = train(model)
        torch.save({k: v.cpu() for k, v in trained.state_dict().items()}, tmp)

    def load(found: Path) -> Any:
        model.load_state_dict(torch.load(found, weights_only=True, map_location="cpu"))
        return model.eval()

    model, cached = file_entry(path, build, load)
    stat = path.stat()
    return mark(model, path.name, stat.st_size, stat.st_mtime_ns), cached
