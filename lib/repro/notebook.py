"""What a notebook calls right after its parameters cell: validate, seed, set up plotting."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np

from .params import PROFILES, Param, Resolved, resolve, spec_table
from .results import publish


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (if importable) so the same parameters give identical tables."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def start(namespace: dict[str, Any], /, **spec: Param) -> Resolved:
    """Validate the notebook's parameters against `spec`, publish them as table `params`, seed, theme plots."""
    values = Resolved(resolve(namespace, spec))
    seed_everything(int(values.get("seed", 0)))
    threads = int(os.environ.get("REPRO_THREADS", "2"))
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)  # NumPy/SciPy BLAS too: oversubscribed BLAS threads spin on a shared machine
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        pass
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    publish("params", spec_table({"profile": Param(str, "default", choices=PROFILES, help="named set of values"), **spec}, values))
    return values
