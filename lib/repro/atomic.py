"""Atomic file writes: a temporary file in the same directory, then a rename.

A temporary file or folder is named `.<target name>.<pid>-<random>.tmp`: the writer's process id lets a later run
tell a killed writer's leftover (`clear_stale`) from a write in progress in another process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# `.<name>.<pid>-<random>.tmp`, and the names written before the pid was added: `.<name>.<random>.tmp` (files) and
# `.<name>.<random>` (folders), mkstemp's and mkdtemp's 8 random characters
TEMP_NAME = re.compile(r"^\..+\.(?P<pid>[0-9]+)-[a-z0-9_]{8}\.tmp$")
OLD_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}(?:\.tmp)?$")
OLD_TEMP_AGE = 24 * 3600.0  # seconds: a temporary name without a pid older than this is a leftover


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _prefix(target: Path) -> str:
    """The start of a temporary name beside `target`: `.<name>.<pid>-` (mkstemp adds the random part)."""
    return f".{target.name}.{os.getpid()}-"


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(target), suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file ordinary permissions
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory beside `path`; it replaces `path` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(target), suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, obj: Any) -> None:
    """Write `obj` as indented JSON to `path` atomically."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n")


def copy_file(src: str | Path, dst: str | Path) -> None:
    """Copy `src` onto `dst` atomically."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def _writer_alive(pid: int, written: float) -> bool:
    """Whether process `pid` is running and was already running at `written` (a later process under a reused pid
    is not the writer)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    try:
        import psutil
    except ImportError:
        return True
    try:
        return psutil.Process(pid).create_time() <= written + 1.0
    except psutil.Error:
        return False


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether `path` is a temporary file or folder of `atomic_path`/`atomic_dir` that no live process is writing:
    its writer (the pid in its name) is gone, or, for a name without a pid, it is older than OLD_TEMP_AGE."""
    match, old = TEMP_NAME.match(path.name), OLD_TEMP_NAME.match(path.name)
    if not (match or old):
        return False
    try:
        written = path.lstat().st_mtime
    except FileNotFoundError:
        return False
    if match:
        return not _writer_alive(int(match["pid"]), written)
    if path.is_dir() or path.name.endswith(".tmp"):
        return (time.time() if now is None else now) - written > OLD_TEMP_AGE
    return False


def clear_stale(folder: str | Path) -> list[Path]:
    """Remove the temporary files and folders a killed writer left anywhere under `folder` (see `is_stale`);
    return what was removed. Other files, and writes in progress, are left alone."""
    removed: list[Path] = []
    for top, dirs, files in os.walk(folder):
        for name in list(dirs):
            path = Path(top) / name
            if is_stale(path):
                shutil.rmtree(path, ignore_errors=True)
                dirs.remove(name)
                removed.append(path)
        for name in files:
            path = Path(top) / name
            if is_stale(path):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed
