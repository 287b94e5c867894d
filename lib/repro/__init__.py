"""repro: the shared library of the reproducibility book (metrics, data, models, runner)."""

from .notebook import start
from .params import Param, ParameterError
from .results import publish

__version__ = "0.1.0"
__all__ = ["Param", "ParameterError", "__version__", "publish", "start"]
