"""repro: the shared library of the reproducibility book (metrics, data, models, runner)."""

from .interrupts import guard_start

guard_start()  # first: Ctrl-C while `python -m repro` imports ends in one line, not a traceback

from .numerics import pin_cpu_numerics  # noqa: E402

pin_cpu_numerics()  # before anything below can import NumPy or torch: same CPU kernels on every machine

from .progress import install as _report_progress  # noqa: E402

_report_progress()  # in a runner's kernel, before any module binds tqdm: bars report to the runner, not the page

from .notebook import start  # noqa: E402
from .params import Param, ParameterError  # noqa: E402
from .results import publish  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Param", "ParameterError", "__version__", "pin_cpu_numerics", "publish", "start"]
