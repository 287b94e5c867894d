"""Ctrl-C and SIGTERM while `python -m repro` is still importing: one line, no traceback, nothing written.

`python -m repro` spends its first seconds importing this package (NumPy, pandas, SciPy, then the runner); the
package imports this module first, and the runner's main() replaces these handlers with its own."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

INTERRUPTED_STARTING = "error: interrupted while starting; nothing was run, earlier results are untouched\n"


def _starting_command_line() -> bool:
    """Whether this process is `python -m repro` importing the package (before its __main__ runs)."""
    argv = list(getattr(sys, "orig_argv", ()))
    given = any(a == "-mrepro" or (a == "-m" and argv[i + 1 : i + 2] == ["repro"]) for i, a in enumerate(argv))
    return given and sys.argv[:1] == ["-m"]


def _quit_while_starting(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C or SIGTERM before the runner's own handler is in place: nothing has been written yet; say so in one
    line and exit at once (128 + signal number), without a traceback from the import under way."""
    os.write(2, INTERRUPTED_STARTING.encode())
    os._exit(128 + signum)


def guard_start() -> None:
    """Install the start-up handlers, only in `python -m repro` (a kernel or a test keeps its own)."""
    if _starting_command_line():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, _quit_while_starting)
