"""The runner's Jupyter kernels: connection files in the runner's runtime folder, and a hard stop on Ctrl-C."""

from __future__ import annotations

import os
import signal
import uuid
import weakref
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir

_LIVE: weakref.WeakSet[TrackedKernelManager] = weakref.WeakSet()


class TrackedKernelManager(AsyncKernelManager):
    """A kernel manager whose connection file lives in JUPYTER_RUNTIME_DIR and whose kernel `kill_all` can stop."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        if not self.connection_file:
            self.connection_file = os.path.join(jupyter_runtime_dir(), f"kernel-{uuid.uuid4().hex}.json")
        _LIVE.add(self)

    async def _async_interrupt_kernel(self) -> None:
        """Interrupt the kernel, except as the first step of shutting it down: jupyter_client interrupts before its
        shutdown request, and a kernel still finishing its last reply then logs "KeyboardInterrupt caught in
        kernel." on a run that succeeded. A kernel that does not answer the request is killed all the same."""
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


def kill_all() -> int:
    """SIGKILL every running kernel of this process with its process group (safe in a signal handler); how many."""
    killed = 0
    for manager in list(_LIVE):
        provisioner = getattr(manager, "provisioner", None)
        process = getattr(provisioner, "process", None)
        if process is None or process.poll() is not None:
            continue
        try:
            os.killpg(getattr(provisioner, "pgid", None) or process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        killed += 1
    return killed
