"""Progress a person can see while a notebook runs, without any of it reaching the page.

Inside a kernel started by the runner (`REPRO_PROGRESS` names a status file), every tqdm bar the library or its
dependencies open (`tqdm.auto`, the Trainer's bar) reports its description and count to that file instead of
writing to the notebook, and each code cell reports itself as it starts. The runner's `Monitor` reads the file and
shows the notebook, its section (the last heading above the running cell), the innermost bar and the elapsed time:
one rewritten status line in a terminal, and in a log a line at each new section and at least once a minute.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import tqdm.std

STATUS_VAR = "REPRO_PROGRESS"  # the status file a kernel reports to (set by the runner)
EVERY_VAR = "REPRO_PROGRESS_EVERY"  # seconds between log lines when nothing changes (default 60)
LOG_EVERY = 60.0
MIN_GAP = 10.0  # a log's first line comes after this many seconds; then a new stage at most once per this many
WRITE_EVERY = 0.5  # at most one status write per this many seconds from a bar's updates

_state: dict[str, Any] = {"cell": None, "bars": []}
_lock = threading.Lock()
_last_write = 0.0


def cell_key(source: str) -> str:
    """A code cell's identity in the status file: a short hash of its source."""
    return hashlib.sha1(source.strip().encode()).hexdigest()[:12]


def _write(force: bool = False) -> None:
    """Write the state to the status file (atomically, throttled to one write per WRITE_EVERY unless forced)."""
    global _last_write
    path = os.environ.get(STATUS_VAR)
    now = time.monotonic()
    if not path or (not force and now - _last_write < WRITE_EVERY):
        return
    _last_write = now
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        Path(tmp).write_text(json.dumps(_state))
        os.replace(tmp, path)
    except OSError:  # progress is best effort: never fail a run over it
        pass


class ReportingTqdm(tqdm.std.tqdm):
    """A tqdm bar that reports to the status file and writes nothing to the notebook's output."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["file"] = io.StringIO()  # counts and timing as usual; the text goes nowhere
        kwargs.pop("dynamic_ncols", None)
        super().__init__(*args, **kwargs)
        if not self.disable:
            with _lock:
                _state["bars"].append({"id": id(self), "desc": self.desc or "", "n": 0, "total": self.total})
            _write(force=True)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:  # called at tqdm's refresh interval
        with _lock:
            for bar in _state["bars"]:
                if bar["id"] == id(self):
                    bar.update(desc=self.desc or "", n=self.n, total=self.total)
        _write()
        return True

    def close(self) -> None:
        if not self.disable:
            with _lock:
                _state["bars"] = [b for b in _state["bars"] if b["id"] != id(self)]
            _write(force=True)
        super().close()


def shown() -> bool:
    """Whether a long step should open a bar: at a terminal, or inside a runner's kernel (where the bar reports to the
    status file and writes nothing to the notebook). Elsewhere, a plain notebook kernel would keep every update."""
    return bool(os.environ.get(STATUS_VAR)) or sys.stderr.isatty()


def _pre_run_cell(info: Any) -> None:
    with _lock:
        _state["cell"] = cell_key(getattr(info, "raw_cell", "") or "")
        _state["bars"] = []
    _write(force=True)


def use_tqdm(cls: type) -> None:
    """Make `tqdm.auto.tqdm` (what the library and its dependencies open) be `cls`. Importing tqdm.auto in a kernel
    without ipywidgets warns "IProgress not found" into the notebook: silenced, since no widget is ever shown."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tqdm.std.TqdmWarning)
        auto = importlib.import_module("tqdm.auto")
        autonotebook = importlib.import_module("tqdm.autonotebook")
    auto.tqdm = cls
    autonotebook.tqdm = cls


def install() -> None:
    """In a runner's kernel: route tqdm bars to the status file and report each cell. A no-op elsewhere."""
    if not os.environ.get(STATUS_VAR):
        return
    use_tqdm(ReportingTqdm)
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and _pre_run_cell not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", _pre_run_cell)


def sections(nb: Any) -> dict[str, tuple[int, str]]:
    """Each code cell's key -> (its number among the code cells, the last markdown heading above it)."""
    out: dict[str, tuple[int, str]] = {}
    heading, number = "", 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip()
        elif cell.cell_type == "code":
            number += 1
            out.setdefault(cell_key(cell.source), (number, heading))
    return out


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


class Monitor(threading.Thread):
    """Shows a running notebook's progress from its kernel's status file, until `stop()`."""

    def __init__(self, stem: str, nb: Any, status: Path, stream: TextIO | None = None, poll: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.stem, self.status, self.poll = stem, status, poll
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.cells = sections(nb)
        self.n_cells = sum(1 for c in nb.cells if c.cell_type == "code")
        self.every = float(os.environ.get(EVERY_VAR, LOG_EVERY))
        self.began = time.monotonic()
        self._stop_event = threading.Event()
        self._logged_at, self._logged_stage = -float("inf"), None
        self.drawn = False  # a terminal line is on screen

    def line(self) -> tuple[str, str]:
        """(stage, status line): the stage is the section and the innermost bar's description."""
        try:
            state = json.loads(self.status.read_text())
        except (OSError, ValueError):
            state = {}
        number, heading = self.cells.get(state.get("cell") or "", (0, ""))
        parts = [self.stem, f"cell {number}/{self.n_cells}" if number else "starting"]
        stage = heading
        if heading:
            parts.append(heading)
        bars = state.get("bars") or []
        if bars:
            bar = bars[-1]
            total = bar.get("total")
            count = f"{bar.get('n', 0)}/{total}" if total else f"{bar.get('n', 0)}"
            parts.append(f"{bar.get('desc') or 'steps'} {count}")
            if total:
                done = max(0.0, min(1.0, bar.get("n", 0) / total))
                parts.append("[" + "#" * round(20 * done) + "." * (20 - round(20 * done)) + "]")
            stage = f"{heading} / {bar.get('desc') or 'steps'}"
        parts.append(f"elapsed {_clock(time.monotonic() - self.began)}")
        return stage, " · ".join(parts)

    def show(self) -> None:
        """Draw the status once: rewrite the terminal line, or log a line on a new stage or after `every` s."""
        stage, text = self.line()
        if self.tty:
            width = shutil_columns()
            self.stream.write("\r" + text[: width - 1].ljust(width - 1))
            self.stream.flush()
            self.drawn = True
            return
        now = time.monotonic()
        if now - self.began < MIN_GAP:  # a run refused in its first seconds logs its one error line, nothing else
            return
        since = now - self._logged_at
        if since >= self.every or (stage != self._logged_stage and since >= min(MIN_GAP, self.every)):
            self.stream.write(text + "\n")
            self.stream.flush()
            self._logged_at, self._logged_stage = now, stage

    def run(self) -> None:
        while not self._stop_event.wait(self.poll):
            self.show()

    def stop(self) -> None:
        """Stop showing; clear the terminal line (logs keep their lines)."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=5)
        if self.drawn:
            self.stream.write("\r" + " " * (shutil_columns() - 1) + "\r")
            self.stream.flush()


def shutil_columns() -> int:
    """The terminal's width (80 when unknown)."""
    import shutil

    return shutil.get_terminal_size((80, 20)).columns
