"""`python -m repro`: run notebooks with papermill under a profile, cache results, collect tables."""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import yaml

from . import atomic
from .params import PROFILES
from .paths import notebooks_dir, project_root, runs_dir
from .results import collect

EXIT_BAD_INPUT = 2
VERSIONED = ("repro", "torch", "numpy", "pandas", "scikit-learn", "scipy", "transformers",
             "accelerate", "datasets", "opacus", "autodp", "adversarial-robustness-toolbox", "papermill",
             "jupytext", "seaborn")


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


def parse_value(text: str) -> Any:
    """Parse a -p value as YAML (5 -> int, 0.1 -> float, true -> bool, [1, 2] -> list), else a string."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def code_hash() -> str:
    """Digest of every source file of the repro package."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(source: Path, profile: str, overrides: dict[str, Any]) -> str:
    """Key over notebook source, profile, explicit parameters and repro code."""
    blob = json.dumps({"source": source.read_text(encoding="utf-8"), "profile": profile,
                       "params": overrides, "code": code_hash()}, sort_keys=True)
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


def to_ipynb(source: Path, keep_until_validation: bool = False) -> Any:
    """Read a py:percent source as a notebook; optionally keep only cells up to the validation cell."""
    import jupytext

    nb = jupytext.read(source)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1:
        raise RunError(f"{source.name} needs exactly one cell tagged 'parameters', found {len(tagged)}", EXIT_BAD_INPUT)
    if keep_until_validation:
        code_after = [i for i, c in enumerate(nb.cells) if i > tagged[0] and c.cell_type == "code"]
        nb.cells = nb.cells[: code_after[0] + 1] if code_after else nb.cells
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    return nb


def _execute(nb: Any, out_path: Path, params: dict[str, Any]) -> Any:
    """Execute `nb` with papermill into `out_path`, mapping a ParameterError to exit code 2."""
    import nbformat
    import papermill as pm

    src = out_path.with_suffix(".src.ipynb")
    nbformat.write(nb, src)
    try:
        return pm.execute_notebook(str(src), str(out_path), parameters=params, kernel_name="python3",
                                   cwd=str(project_root()), progress_bar=sys.stderr.isatty(), log_output=False,
                                   extra_arguments=["--IPKernelApp.log_level=ERROR"])
    except pm.PapermillExecutionError as err:
        code = EXIT_BAD_INPUT if err.ename in ("ParameterError", "MissingDataError") else 1
        raise RunError(f"{err.ename}: {err.evalue}", code) from None
    finally:
        src.unlink(missing_ok=True)


def prepare_only(name: str, profile: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Validate parameters by running only the parameters and validation cells; write no results."""
    source = find_notebook(name)
    nb = to_ipynb(source, keep_until_validation=True)
    scratch = runs_dir() / ".scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    out = scratch / f"{source.stem}.{profile}.prepare.ipynb"
    try:
        executed = _execute(nb, out, {"profile": profile, **overrides})
    finally:
        out.unlink(missing_ok=True)
    return {r["parameter"]: r["value"] for r in collect(executed).get("params", [])}


def run(name: str, profile: str = "default", overrides: dict[str, Any] | None = None, force: bool = False) -> dict[str, Any]:
    """Execute a notebook at `profile` into runs/<profile>/, caching on source, params and code."""
    import nbformat

    overrides = dict(overrides or {})
    source = find_notebook(name)
    stem = source.stem
    final_dir = runs_dir() / profile
    key = cache_key(source, profile, overrides)
    cached = runs_dir() / ".cache" / f"{stem}-{key}"
    if not force and (cached / f"{stem}.json").exists() and (cached / f"{stem}.ipynb").exists():
        result = json.loads((cached / f"{stem}.json").read_text())
        result["cached"] = True
    else:
        nb = to_ipynb(source)
        scratch = runs_dir() / ".scratch"
        scratch.mkdir(parents=True, exist_ok=True)
        out = scratch / f"{stem}.{profile}.{key}.ipynb"
        began = time.perf_counter()
        try:
            executed = _execute(nb, out, {"profile": profile, **overrides})
        except RunError:
            failed = final_dir / f"{stem}.failed.ipynb"
            if out.exists():
                failed.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(out, failed)
            raise
        tables = collect(executed)
        params = {r["parameter"]: r["value"] for r in tables.get("params", [])}
        result = {"notebook": stem, "profile": profile, "params": params, "tables": tables,
                  "seconds": round(time.perf_counter() - began, 2), "versions": versions(),
                  "cache_key": key}
        with atomic.atomic_dir(cached) as tmp:
            nbformat.write(executed, tmp / f"{stem}.ipynb")
            atomic.write_json(tmp / f"{stem}.json", result)
        out.unlink(missing_ok=True)
        result["cached"] = False
    atomic.copy_file(cached / f"{stem}.ipynb", final_dir / f"{stem}.ipynb")
    atomic.copy_file(cached / f"{stem}.json", final_dir / f"{stem}.json")
    (final_dir / f"{stem}.failed.ipynb").unlink(missing_ok=True)
    return result


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


def stage_book(profile: str) -> Iterator[dict[str, Any]]:
    """Run every notebook of the table of contents at `profile`, copy it into book/executed/, yield each result."""
    for stem in toc_notebooks():
        result = run(stem, profile)
        atomic.copy_file(runs_dir() / profile / f"{stem}.ipynb", project_root() / "book" / "executed" / f"{stem}.ipynb")
        yield result


def _parser() -> argparse.ArgumentParser:
    """Command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m repro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute one notebook into runs/<profile>/")
    r.add_argument("notebook", help="name in notebooks/ (e.g. metrics_by_hand) or a path to a .py source")
    r.add_argument("--profile", default="default", choices=PROFILES)
    r.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="override one parameter (repeatable); VALUE is parsed as YAML")
    r.add_argument("--prepare-only", action="store_true",
                   help="validate the parameters (no data, no training), print them, write nothing")
    r.add_argument("--force", action="store_true", help="ignore the cache and execute again")
    b = sub.add_parser("book", help="run every notebook of _toc.yml and stage it for jupyter-book")
    b.add_argument("--profile", default="default", choices=PROFILES)
    c = sub.add_parser("collect", help="print the results tables of a notebook executed by plain papermill")
    c.add_argument("executed", type=Path)
    sub.add_parser("data", help="prepare the offline models and data (SmolLM2 from its GGUF, BIG-bench task files)")
    return parser


def _main(args: argparse.Namespace) -> None:
    """Dispatch one command."""
    if args.command == "run":
        overrides = {}
        for name, value in args.param:
            if name == "profile":
                raise RunError("set the profile with --profile, not -p profile", EXIT_BAD_INPUT)
            overrides[name] = parse_value(value)
        if args.prepare_only:
            print(json.dumps(prepare_only(args.notebook, args.profile, overrides), indent=2))
            return
        result = run(args.notebook, args.profile, overrides, force=args.force)
        how = "cached" if result["cached"] else f"{result['seconds']} s"
        print(f"{result['notebook']} [{result['profile']}]: {len(result['tables'])} tables ({how}) "
              f"-> {runs_dir() / result['profile'] / result['notebook']}.json")
    elif args.command == "book":
        for result in stage_book(args.profile):
            how = "cached" if result["cached"] else f"{result['seconds']} s"
            print(f"{result['notebook']} [{args.profile}]: {how}", flush=True)
    elif args.command == "collect":
        import nbformat

        if not args.executed.is_file():
            raise RunError(f"no executed notebook at {args.executed}", EXIT_BAD_INPUT)
        print(json.dumps(collect(nbformat.read(args.executed, as_version=4)), indent=2))
    elif args.command == "data":
        from .data import fetch_bigbench
        from .pretrained import minilm_path, smollm2_path

        print(f"SmolLM2-135M: {smollm2_path()}")
        print(f"all-MiniLM-L6-v2: {minilm_path()}")
        for path in fetch_bigbench():
            print(f"BIG-bench task: {path}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns 0, 1 (run failed) or 2 (bad input)."""
    args = _parser().parse_args(argv)
    try:
        _main(args)
    except RunError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code
    return 0
