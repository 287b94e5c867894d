"""What a notebook calls right after its parameters cell: validate, seed, set up plotting."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from . import page
from .params import PROFILES, Check, Param, ParameterError, Resolved, resolve, run_checks, spec_table
from .results import MAX_ROWS, forget_published, publish
from .verdict import forget_checks

SEED_LIMIT = 2**32  # NumPy's legacy seeding takes 0 <= seed < 2**32
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
PREPARE_ONLY_VAR = "REPRO_PREPARE_ONLY"  # set by `python -m repro run --prepare-only`: validate, never reach out
MOCK_HUB_VAR = "REPRO_MOCK_HUB"  # set by tests that serve a mock Hub
PAPER_NEEDS_HUB = "profile 'paper' needs the Hugging Face Hub (and a GPU)"


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (if importable) so the same parameters give identical tables."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)
    # What torch.use_deterministic_algorithms(True, warn_only=True) sets for eager kernels. That function also
    # imports torch._inductor (2 s in every kernel) to set the flag only torch.compile reads; no chapter compiles.
    torch._C._set_deterministic_algorithms(True, warn_only=True)


def check_seed(values: dict[str, Any]) -> None:
    """Refuse a seed that NumPy cannot take (negative or 2**32 and above) with a one-line ParameterError."""
    seed = values.get("seed", 0)
    if not 0 <= seed < SEED_LIMIT:
        raise ParameterError(f"parameter 'seed': {seed!r} is out of range, expected int in [0, {SEED_LIMIT - 1}]")


def _tcp_connects(host: str, port: int, timeout: float) -> bool:
    """Whether a TCP connection to host:port opens within `timeout` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def hub_address() -> tuple[str, int]:
    """Host and port of the Hub endpoint that huggingface_hub uses (HF_ENDPOINT overrides it)."""
    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hub endpoint accepts a TCP connection within `timeout` seconds (name lookup included)."""
    host, port = hub_address()
    if not host:
        return False
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(_tcp_connects, host, port, timeout).result(timeout=timeout + 0.5)
    except FutureTimeout:
        return False
    finally:
        pool.shutdown(wait=False)


def hub_problem() -> str | None:
    """Why the Hub cannot serve this run ('HF_HUB_OFFLINE=1 here', 'huggingface.co cannot be reached here'), or None;
    never a problem for prepare-only or a mock Hub."""
    if os.environ.get(MOCK_HUB_VAR) or os.environ.get(PREPARE_ONLY_VAR) == "1":
        return None
    offline = [var for var in OFFLINE_VARS if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on")]
    if offline:
        return f"{offline[0]}=1 here"
    return None if hub_reachable() else f"{hub_address()[0]} cannot be reached here"


def require_hub(profile: str) -> None:
    """At profile paper, fail in one line when the Hub is off or unreachable (not for prepare-only or a mock Hub)."""
    problem = hub_problem() if profile == "paper" else None
    if problem:
        raise ParameterError(f"{PAPER_NEEDS_HUB}, but {problem}: use --profile default")


def parameters_view(view: pd.DataFrame) -> pd.DataFrame:
    """The parameters table as shown: one row per parameter, or, beyond the page's MAX_ROWS rows, two parameters
    side by side per row (the first half on the left, in order; the right side's headers end in a space)."""
    if len(view) <= MAX_ROWS:
        return view
    half = -(-len(view) // 2)
    left, right = view.iloc[:half].reset_index(drop=True), view.iloc[half:].reset_index(drop=True)
    return pd.concat([left, right.rename(columns=lambda c: f"{c} ")], axis=1).fillna("")


def start(namespace: dict[str, Any], /, checks: Sequence[Check] = (), **spec: Param) -> Resolved:
    """Validate parameters against `spec` and `checks`, publish them as table `params`, seed, theme plots."""
    values = Resolved(resolve(namespace, spec))
    forget_published()
    forget_checks()
    check_seed(values)
    run_checks(values, checks)
    require_hub(values["profile"])
    from .mockhub import install_from_env

    install_from_env()  # REPRO_MOCK_HUB set (tests): Hub ids resolve to tiny local fixtures
    seed_everything(int(values.get("seed", 0)))
    threads = int(os.environ.get("REPRO_THREADS", "2"))
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)  # NumPy/SciPy BLAS too: oversubscribed BLAS threads spin on a shared machine
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        pass
    page.set_up()
    table = spec_table({"profile": Param(str, "default", choices=PROFILES, help="named set of values"), **spec}, values)
    view = parameters_view(pd.DataFrame(table)[["parameter", "value", "help"]].astype({"value": str}))
    publish(
        "params", table, view=view, collapsed=f"The {len(table)} parameters of this run (profile {values['profile']})"
    )
    return values
