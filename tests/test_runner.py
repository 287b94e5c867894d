"""The runner: results file, cache, exit code 2 on bad parameters, atomic writes, prepare-only."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NOTEBOOKS, ROOT, error_lines
from repro import atomic
from repro.runner import execute_here, main, run, toc_notebooks

REQUIRED_KEYS = {"notebook", "profile", "params", "tables", "seconds", "versions"}


def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    """Run `python -m repro ...` as a user would (with extra environment variables `env`)."""
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=600,
    )


@pytest.fixture
def in_process(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch):
    """`python -m repro ARGS` with extra environment variables, called in this process: no interpreter start and
    no imports to pay again, for commands that start no kernel (prepare-only, refused parameters). Returns
    (exit status, stdout, stderr); a few tests keep the subprocess path itself under test. `interpreter=True`: the
    same call in its own interpreter, as a user runs it (`cli`)."""

    def call(*args: str, interpreter: bool = False, **env: str) -> tuple[int, str, str]:
        if interpreter:
            proc = cli(*args, **env)
            return proc.returncode, proc.stdout, proc.stderr
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


def test_results_file_has_the_documented_shape(smoke_results, isolated_runs: Path) -> None:
    smoke_results.items()  # every notebook executed once (the fixture runs each on first access)
    for stem in NOTEBOOKS:
        data = json.loads((isolated_runs / "smoke" / f"{stem}.json").read_text())
        assert REQUIRED_KEYS <= set(data)
        assert data["notebook"] == stem and data["profile"] == "smoke"
        assert data["params"]["profile"] == "smoke"
        assert data["seconds"] > 0 and data["versions"]["python"].startswith("3.")
        assert "params" in data["tables"] and "verdict" in data["tables"]
        for records in data["tables"].values():
            assert isinstance(records, list) and all(isinstance(r, dict) for r in records)
        assert (isolated_runs / "smoke" / f"{stem}.ipynb").exists()


def test_every_notebook_is_in_the_book() -> None:
    assert sorted(toc_notebooks()) == NOTEBOOKS


def test_cache_returns_the_same_result_at_once(smoke_results) -> None:
    stem = NOTEBOOKS[0]
    first = smoke_results[stem]  # executed (or already cached) before the timed run
    began = time.perf_counter()
    again = run(stem, "smoke")
    assert again["cached"] is True
    assert time.perf_counter() - began < 5
    assert again["tables"] == first["tables"]


def test_override_changes_params_and_misses_the_cache(runs: Path, tiny: Path) -> None:
    from repro.runner import cache_key

    result = run(str(tiny), "smoke", {"n": 5})  # smoke's n is 2
    assert result["cached"] is False and result["cache_key"] != cache_key(tiny, "smoke", {})
    assert result["params"]["n"] == 5 and len(result["tables"]["rows"]) == 5


@pytest.mark.parametrize(
    "args, needle",
    [
        (["-p", "toy_n", "5"], "parameter 'toy_n': 5 is out of range"),
        (["-p", "toy_n", "many"], "parameter 'toy_n': got 'many' (str), expected int"),
        (["-p", "lm_source", "ftp"], "parameter 'lm_source': got 'ftp', expected one of 'local', 'hub'"),
        (["-p", "bogus", "1"], "unknown parameter 'bogus'"),
    ],
)
def test_bad_parameter_exits_2_and_keeps_earlier_results(
    smoke_results, isolated_runs: Path, in_process, args, needle
) -> None:
    run("metrics_by_hand", "smoke")  # make sure the stored result is the plain smoke one
    stored = isolated_runs / "smoke" / "metrics_by_hand.json"
    before = stored.read_bytes()
    own = args[1:3] == ["toy_n", "5"]  # one case as a user runs it, in its own interpreter; the others in this process
    code, _, err = in_process("run", "metrics_by_hand", "--profile", "smoke", *args, interpreter=own)
    assert code == 2
    lines = error_lines(err)
    assert len(lines) == 1 and needle in lines[0], err
    assert stored.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [
        ["run", "no_such_notebook"],
        ["run", "metrics_by_hand", "--profile", "huge"],
        ["run", "metrics_by_hand", "-p", "profile", "smoke"],
    ],
)
def test_bad_command_line_exits_2(args) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip()


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_paper_profile_parameters_check_without_running(stem: str, isolated_runs: Path, in_process) -> None:
    written = lambda: sorted(
        (p.name, p.stat().st_mtime_ns) for p in (isolated_runs / "paper").glob(f"{stem}*")
    )  # mock runs write here
    before = written()
    code, out, err = in_process("run", stem, "--profile", "paper", "--prepare-only")
    assert code == 0, err
    params = json.loads(out)
    assert params["profile"] == "paper"
    assert written() == before  # prepare-only writes no result


def test_interrupted_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    atomic.write_json(target, {"v": 1})
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(target) as tmp:
            tmp.write_text('{"v": 2, "half')
            raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_plain_papermill_and_collect_work(tmp_path: Path, tiny: Path) -> None:
    """A notebook run with papermill alone (no runner): its parameters cell takes papermill's values, repro.start
    fills the rest from the profile, and `collect` reads the published tables back."""
    src = tmp_path / "nb.ipynb"
    out = tmp_path / "out.ipynb"
    subprocess.run(
        [sys.executable, "-m", "jupytext", "--to", "ipynb", "--set-kernel", "python3", str(tiny), "-o", str(src)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(src),
            str(out),
            "-p",
            "profile",
            "smoke",
            "-p",
            "seed",
            "7",
        ],
        check=True,
        capture_output=True,
        timeout=600,
        cwd=ROOT,
    )
    proc = cli("collect", str(out))
    assert proc.returncode == 0, proc.stderr
    tables = json.loads(proc.stdout)
    params = {r["parameter"]: r["value"] for r in tables["params"]}
    assert params["profile"] == "smoke" and params["seed"] == 7 and params["n"] == 2  # n: smoke's value
    assert tables["rows"] == [{"i": 0}, {"i": 1}]
    import jupytext

    for source in (ROOT / "notebooks").glob("*.py"):  # each chapter names its kernel, as papermill alone needs
        meta = jupytext.read(source).metadata
        assert meta["kernelspec"]["name"] == "python3" and meta["kernelspec"]["language"] == "python", source.name


def test_atomic_files_get_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    atomic.write_json(target, {"v": 1})
    assert target.stat().st_mode & 0o644 == 0o644


# --- Hardening: names, values, validation, interrupts, cache inputs, the paper profile, clean temporary files.

TINY = """# %% tags=["parameters"]
profile = "default"  # smoke | default | paper
seed = None  # random seed
n = None  # rows

# %%
import repro
from repro import Param

P = repro.start(globals(), seed=Param(int, 0, low=0, high=2**32 - 1), n=Param(int, 3, smoke=2, low=1, high=10))

# %%
from pathlib import Path

from ipykernel.kernelapp import IPKernelApp

from repro.results import publish

publish("rows", [{"i": i} for i in range(P.n)])
publish("kernel", [{"runtime": str(Path(IPKernelApp.instance().connection_file).parent)}])
"""


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh runs/ folder of this test alone."""
    folder = tmp_path / "runs"
    monkeypatch.setenv("REPRO_RUNS", str(folder))
    return folder


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A notebook that starts a kernel and publishes two small tables (a run costs a few seconds)."""
    source = tmp_path / "tiny_probe.py"
    source.write_text(TINY)
    return source


def stored_result(runs: Path, stem: str = "metrics_by_hand") -> Path:
    """An earlier result of `stem` at smoke, as a run would have left it."""
    stored = runs / "smoke" / f"{stem}.json"
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_text('{"notebook": "earlier"}\n')
    return stored


def test_declared_parameters_are_read_from_the_parameters_cell_without_running_it() -> None:
    from repro.runner import declared_parameters

    assert declared_parameters(ROOT / "notebooks" / "metrics_by_hand.py") == [
        "profile",
        "seed",
        "toy_n",
        "lm_source",
        "lm_name",
        "min_k",
        "n_sentences",
    ]


@pytest.mark.parametrize(
    "name, needle",
    [
        ("x=__import__('pathlib').Path('{marker}').touch();y", "is not a Python identifier"),
        ("toy n", "parameter name 'toy n' is not a Python identifier"),
        ("class", "parameter name 'class' is not a Python identifier"),
        ("_x", "unknown parameter '_x' of metrics_by_hand: allowed are seed, toy_n, lm_source, lm_name, min_k, n_sent"),
        ("open", "unknown parameter 'open'"),
        ("repro", "unknown parameter 'repro'"),
        ("bogus", "unknown parameter 'bogus'"),
    ],
)
def test_bad_parameter_names_are_refused_before_running(
    runs: Path, tmp_path: Path, in_process, name: str, needle: str
) -> None:
    marker = tmp_path / "pwned"
    stored = stored_result(runs)
    args = ("run", "metrics_by_hand", "--profile", "smoke", "-p", name.format(marker=marker), "1")
    own = "{marker}" in name  # the injection attempt as a user runs it, in its own interpreter; the others here
    code, _, err = in_process(*args, interpreter=own, REPRO_RUNS=str(runs))
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and needle in err, err
    assert not marker.exists() and stored.read_text() == '{"notebook": "earlier"}\n'
    assert not (runs / ".scratch").exists()  # no kernel was started


def test_a_parameter_given_twice_is_an_error(runs: Path, in_process) -> None:
    code, _, err = in_process(
        "run", "metrics_by_hand", "-p", "toy_n", "100", "-p", "toy_n", "200", REPRO_RUNS=str(runs)
    )
    assert code == 2 and err == "error: parameter 'toy_n' is given twice with -p; give it once\n"


def test_a_parameter_of_another_notebook_is_unknown(runs: Path, in_process) -> None:
    args = ("run", "rmd_near_ood", "--prepare-only", "-p", "pairs", "[fashion_mnist]")
    code, _, err = in_process(*args, REPRO_RUNS=str(runs))
    assert code == 2 and err.startswith("error: unknown parameter 'pairs' of rmd_near_ood: allowed")


def test_run_checks_names_given_through_the_api_too(runs: Path) -> None:
    from repro.params import ParameterError

    with pytest.raises(ParameterError, match="unknown parameter '_x'"):
        run("metrics_by_hand", "smoke", {"_x": 1})


@pytest.mark.parametrize(
    "text, value",
    [
        ("1e-1", 0.1),
        ("3e-5", 3e-05),
        ("0300", 300),
        (".5", 0.5),
        ("-2", -2),
        ("1_000", 1000),
        ("2.", 2.0),
        ("true", True),
        ("false", False),
        ("[1, 2]", [1, 2]),
        ("[1e-4, .5]", [1e-4, 0.5]),
        ("null", None),
        ("[fashion_mnist]", ["fashion_mnist"]),
        ("hello", "hello"),
        ("yes", "yes"),
        ("2020-01-01", "2020-01-01"),
        ("1:30", "1:30"),
        ("0x1F", "0x1F"),
        ("a: b", "a: b"),
        ("", ""),
        ("!!python/object/apply:os.getcwd []", "!!python/object/apply:os.getcwd []"),
    ],
)
def test_values_are_read_as_a_user_means_them(text: str, value) -> None:
    from repro.runner import parse_value

    got = parse_value(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text", [".nan", "nan", "NaN", ".inf", "inf", "-.inf", "-inf", "[.nan]", "[1, inf]"])
def test_nan_and_infinity_parse_as_floats_for_validation_to_refuse(text: str) -> None:
    import math

    from repro.params import Param, ParameterError, check_value
    from repro.runner import parse_value

    value = parse_value(text)
    items = value if isinstance(value, list) else [value]
    assert any(isinstance(v, float) and not math.isfinite(v) for v in items)
    spec = Param(list, [1.0], items=float) if isinstance(value, list) else Param(float, 1.0)
    with pytest.raises(ParameterError, match="expected a finite number"):
        check_value("x", value, spec)


BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]"
)


@pytest.mark.parametrize(
    "text, needle",
    [
        (BOMB, "YAML anchors and aliases (& and *) are not allowed"),
        ("&a 5", "YAML anchors and aliases"),
        ("[" * 50 + "]" * 50, "nested deeper than"),
        ("[" + "1, " * 5000 + "1]", "the limit is 10000"),
    ],
)
def test_hostile_values_give_one_line_errors(runs: Path, in_process, text: str, needle: str) -> None:
    stored = stored_result(runs)
    args = ("run", "metrics_by_hand", "--profile", "smoke", "-p", "toy_n", text)
    own = text == BOMB  # the billion laughs as a user sends it, in its own interpreter; the others in this process
    code, _, err = in_process(*args, interpreter=own, REPRO_RUNS=str(runs))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: parameter 'toy_n': ")
    assert needle in err
    assert stored.read_text() == '{"notebook": "earlier"}\n'


def test_every_notebook_bounds_its_seed_for_numpy() -> None:
    import ast
    import importlib

    for source in sorted((ROOT / "notebooks").glob("*.py")):
        tree = ast.parse(source.read_text())
        (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "start"]
        inline = [k.value for k in call.keywords if k.arg == "seed"]
        if inline:  # seed=Param(..., high=...) written in the notebook
            high = eval(
                compile(ast.Expression(next(k.value for k in inline[0].keywords if k.arg == "high")), "", "eval")
            )
        else:  # **module.SPEC: the spec lives in the chapter package
            (spread,) = [k.value for k in call.keywords if k.arg is None]
            modules = {
                a.asname or a.name: f"{n.module}.{a.name}"
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom)
                for a in n.names
            }
            high = importlib.import_module(modules[spread.value.id]).SPEC["seed"].high
        assert high == 2**32 - 1, source.name


@pytest.mark.parametrize(
    "stem, args, needle",
    [
        ("metrics_by_hand", ["-p", "seed", "4294967296"], "parameter 'seed': 4294967296 is out of range"),
        ("metrics_by_hand", ["-p", "min_k", ".nan"], "parameter 'min_k': got nan, expected a finite number"),
        ("rmd_near_ood", ["-p", "ridges", "[.nan]"], "parameter 'ridges': got nan, expected a finite number"),
        ("deepgini_apfd", ["-p", "pairs", "[fashion_mnist]"], "parameter 'pairs': got item 'fashion_mnist'"),
        ("deepgini_apfd", ["-p", "recipe", "sgd"], "parameter 'recipe'"),
        ("deepgini_apfd", ["-p", "pairs", "[cifar10:lenet1]"], "parameter 'pairs': cifar10 needs data_source hub"),
        ("mink_contamination", ["-p", "sets", "[BoolQ]"], "parameter 'sets': ['BoolQ'] at source local: choose from"),
        ("mink_contamination", ["-p", "low_learning_rate", "0.001"], "parameter 'learning_rate': it must exceed"),
        ("mink_contamination", ["-p", "size_sets", "[imdb]"], "parameter 'size_sets': got item 'imdb'"),
        ("mink_contamination", ["-p", "ks", "[0.1, 0.5]"], "parameter 'ks': it must include 0.2, the paper's k"),
    ],
)
def test_prepare_only_validates_what_a_run_validates(
    runs: Path, in_process, stem: str, args: list[str], needle: str
) -> None:
    code, _, err = in_process("run", stem, "--prepare-only", *args, REPRO_RUNS=str(runs))
    assert code == 2, err
    lines = error_lines(err)
    assert len(lines) == 1 and needle in lines[0], err


def test_a_run_in_this_process_gives_the_kernels_tables_and_puts_the_process_back(smoke_results) -> None:
    import warnings

    import matplotlib
    import numpy as np
    import torch

    def state() -> tuple:
        return (
            dict(os.environ),
            torch.get_num_threads(),
            torch.are_deterministic_algorithms_enabled(),
            len(warnings.filters),
            matplotlib.rcParams["figure.dpi"],
            np.random.get_state()[1][:4].tolist(),
            torch.get_rng_state()[:16].tolist(),
        )

    kernel = smoke_results["metrics_by_hand"]  # the book's smoke run, in its own kernel
    before = state()
    here = execute_here("metrics_by_hand", "smoke")
    after = state()
    assert {k: v for k, v in after[0].items() if before[0].get(k) != v} == {} and after[0].keys() == before[0].keys()
    assert after[1:] == before[1:]
    assert here["params"] == kernel["params"] and here["profile"] == "smoke"
    assert set(here["tables"]) == set(kernel["tables"]) and len(here["tables"]) >= 5
    # two executions, in two processes, give the same tables: every draw is seeded from the parameters
    assert json.dumps(here["tables"], sort_keys=True) == json.dumps(kernel["tables"], sort_keys=True)


def test_prepare_only_reads_exponents_as_floats(runs: Path) -> None:
    proc = cli(
        "run",
        "mink_contamination",
        "--prepare-only",
        "-p",
        "learning_rate",
        "3e-5",
        "-p",
        "seed",
        "0300",
        REPRO_RUNS=str(runs),
    )
    assert proc.returncode == 0, proc.stderr
    params = json.loads(proc.stdout)
    assert params["learning_rate"] == 3e-05 and params["seed"] == 300


def test_next_run_clears_what_a_killed_run_left(runs: Path, tiny: Path) -> None:
    key = "0123456789abcdef0123"
    scratch = runs / ".scratch"
    left = [
        scratch / f"tiny_probe.smoke.{key}.ipynb",
        scratch / f"tiny_probe.smoke.{key}.src.ipynb",
        scratch / "tiny_probe.paper.prepare.ipynb",
        scratch / "runtime" / "tiny_probe" / "kernel-dead.json",
        runs / ".cache" / f".tiny_probe-{key}.k1ll3d" / "tiny_probe.json",
        runs / "smoke" / ".tiny_probe.json.x1y2.tmp",
    ]
    others = [
        scratch / f"other.smoke.{key}.ipynb",
        runs / ".cache" / f".other-{key}.abc123" / "other.json",
        runs / "smoke" / ".other.json.x1y2.tmp",
    ]
    for path in left + others:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{half")
    result = run(str(tiny), "smoke")
    assert result["cached"] is False and len(result["tables"]["rows"]) == 2
    assert [p for p in left if p.exists()] == [] and not (runs / ".cache" / f".tiny_probe-{key}.k1ll3d").exists()
    assert all(p.exists() for p in others)  # another notebook's files are its own run's business
    assert result["tables"]["kernel"] == [{"runtime": str(scratch / "runtime" / "tiny_probe")}]
    assert not (scratch / "runtime" / "tiny_probe").exists()  # the connection file went with the kernel


def test_damaged_cache_entry_is_discarded_and_run_again(runs: Path, tiny: Path, monkeypatch) -> None:
    from repro import runner

    monkeypatch.setattr(runner, "cache_key", lambda *args: "0" * 20)  # others may edit the code meanwhile
    first = run(str(tiny), "smoke")
    stored = runs / ".cache" / f"tiny_probe-{first['cache_key']}" / "tiny_probe.json"
    text = stored.read_text()
    stored.write_text(text[: len(text) // 2])
    again = run(str(tiny), "smoke")
    assert again["cached"] is False and again["tables"] == first["tables"]
    assert json.loads(stored.read_text())["tables"] == first["tables"]
    assert run(str(tiny), "smoke")["cached"] is True


def test_cache_key_covers_the_data_the_versions_and_the_data_location(tmp_path: Path, monkeypatch) -> None:
    from repro import runner

    data = tmp_path / "data"
    task = data / "bigbench" / "intent_recognition" / "task.json"
    task.parent.mkdir(parents=True)
    full = json.dumps({"examples": [{"input": f"utterance {i}", "target": "intent"} for i in range(693)]})
    task.write_text(full)
    fmnist = tmp_path / "fashion-mnist"
    fmnist.mkdir()
    (fmnist / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\0" * 100)
    monkeypatch.setenv("REPRO_DATA", str(data))
    monkeypatch.setattr(runner, "FASHION_MNIST_DIR", fmnist)
    source = ROOT / "notebooks" / "metrics_by_hand.py"

    def key() -> str:
        """The smoke key of metrics_by_hand."""
        return runner.cache_key(source, "smoke", {})

    original = key()
    task.write_text(json.dumps({"examples": json.loads(full)["examples"][:346]}))
    assert key() != original
    task.write_text(full)
    assert key() == original  # content, not time
    for written in (
        data / "models" / "cnn-1.pt",
        data / "models" / "mink" / "c.corpus.json",
        data / "crt" / "x.json",
        data / "bigbench" / ".task.json.x1y2.tmp",
    ):
        written.parent.mkdir(parents=True, exist_ok=True)
        written.write_text("{}")
    assert key() == original  # what the notebooks write (caches) and temporary files are not inputs
    os.utime(fmnist / "t10k-labels-idx1-ubyte.gz", ns=(1, 1))
    assert key() != original  # large files by (size, mtime)
    os.utime(fmnist / "t10k-labels-idx1-ubyte.gz", ns=(1, 1))
    touched = key()
    monkeypatch.setattr(runner, "versions", lambda: {"torch": "0.0"})
    assert key() != touched
    monkeypatch.undo()
    monkeypatch.setattr(runner, "FASHION_MNIST_DIR", fmnist)
    shutil.copytree(data, tmp_path / "elsewhere")
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "elsewhere"))
    assert key() != touched


def test_cache_key_is_fast_on_the_real_data() -> None:
    from repro.runner import cache_key

    began = time.perf_counter()
    cache_key(ROOT / "notebooks" / "mink_contamination.py", "default", {})
    assert time.perf_counter() - began < 1.0


def start_metrics_run(runs: Path) -> subprocess.Popen:
    """`python -m repro run metrics_by_hand --profile smoke --force` started as at a terminal, into `runs`."""
    return subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "metrics_by_hand", "--profile", "smoke", "--force"],
        cwd=ROOT,
        env={**os.environ, "REPRO_RUNS": str(runs)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C at a terminal reaches a process whose SIGINT is the default; a test suite started in the background
        # of a non-interactive shell inherits SIGINT ignored, which the runner (rightly) keeps ignoring
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_ctrl_c_stops_a_run_cleanly(runs: Path) -> None:
    proc = start_metrics_run(runs)
    runtime = runs / ".scratch" / "runtime" / "metrics_by_hand"
    deadline = time.monotonic() + 120
    while not list(runtime.glob("kernel-*.json")):  # the kernel is starting
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert len(error_lines(stderr)) == 1 and error_lines(stderr)[0].startswith("error: interrupted"), stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    leftovers = [p for p in runs.rglob("*") if p.is_file() and p.suffix != ".lock"]
    assert leftovers == []  # no result, no scratch notebook, no connection file, no temporary cache entry
    kernels = [p for p in Path("/proc").glob("[0-9]*/cmdline") if str(runtime) in p.read_text(errors="replace")]
    assert kernels == []


def test_paper_without_the_hub_fails_fast_and_says_why(runs: Path, tiny: Path) -> None:
    began = time.perf_counter()
    proc = cli("run", str(tiny), "--profile", "paper", REPRO_RUNS=str(runs), HF_HUB_OFFLINE="1", REPRO_MOCK_HUB="")
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "profile 'paper' needs the Hugging Face Hub" in lines[0], proc.stderr
    assert "use --profile default" in lines[0] and time.perf_counter() - began < 60
    assert not (runs / "paper" / "tiny_probe.json").exists()
    proc = cli("run", str(tiny), "--profile", "paper", "--prepare-only", REPRO_RUNS=str(runs), HF_HUB_OFFLINE="1")
    assert proc.returncode == 0 and json.loads(proc.stdout)["profile"] == "paper"


@pytest.mark.parametrize(
    "args, prepare_rc, needle",
    [
        (["-p", "target_docs", "100"], 2, "parameters 'target_docs' + 'eval_docs': 100 + 10 exceed docs_per_domain"),
        (["-p", "eval_docs", "95"], 2, "parameters 'target_docs' + 'eval_docs': 30 + 95 exceed docs_per_domain"),
        (["-p", "block_size", "8192"], 0, "parameter 'block_size': 8192 tokens, but the held-out text of"),
    ],
)
def test_data_selection_sizes_without_one_block_are_refused_before_training(
    runs: Path, in_process, args: list[str], prepare_rc: int, needle: str
) -> None:
    code, _, err = in_process(
        "run", "data_selection", "--profile", "smoke", "--prepare-only", *args, REPRO_RUNS=str(runs)
    )
    assert code == prepare_rc, err  # block_size needs the token counts: refused once they are known
    if prepare_rc == 2:  # the notebook cells a run executes first, in the runner; the kernel path is tested above
        assert needle in error_lines(err)[0] and "Traceback" not in err
        return
    began = time.perf_counter()
    proc = cli("run", "data_selection", "--profile", "smoke", *args, REPRO_RUNS=str(runs))
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: ParameterError: ") and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and time.perf_counter() - began < 120
    assert not (runs / "smoke" / "data_selection.json").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--profile", "paper"], "profile 'paper' needs the Hugging Face Hub (and a GPU), but HF_HUB_OFFLINE=1 here"),
        (
            "--profile smoke -p source hub -p domains [Pile-CC,Github] -p targets [Github] -p doremi_fractions [1,1]".split(),
            "parameter 'source': 'hub' needs the Hugging Face Hub, but HF_HUB_OFFLINE=1 here: use source local",
        ),
    ],
)
def test_data_selection_hub_loads_fail_fast_without_the_hub(
    runs: Path, in_process, args: list[str], needle: str
) -> None:
    began = time.perf_counter()
    proc = cli("run", "data_selection", *args, REPRO_RUNS=str(runs), HF_HUB_OFFLINE="1", REPRO_MOCK_HUB="")
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "ConnectionError" not in proc.stderr and time.perf_counter() - began < 60
    code, _, err = in_process(
        "run", "data_selection", "--prepare-only", *args, REPRO_RUNS=str(runs), HF_HUB_OFFLINE="1"
    )
    assert code == 0, err  # prepare-only never reaches out


def test_book_target_goes_online_at_the_paper_profile() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "BOOK_OFFLINE := $(if $(filter paper,$(PROFILE)),,$(OFFLINE))" in makefile
    book = makefile.split("\nbook:")[1].split("\n\n")[0]
    assert "$(BOOK_OFFLINE) $(PY) -m repro book" in book and "$(OFFLINE)" not in book


def test_pytest_keeps_only_failed_tests_temporary_directories() -> None:
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["tmp_path_retention_policy"] == "failed"


def test_every_cache_folder_is_left_out_of_the_inputs_fingerprint() -> None:
    import re

    from repro.runner import DATA_CACHE_FOLDERS

    # a notebook that writes a JSON entry into a folder the fingerprint reads would change every cache key
    kinds = {
        m.group(1).split("/")[0]
        for path in (ROOT / "lib" / "repro").rglob("*.py")
        for m in re.finditer(r'entry_path\(\s*"([^"]+)"', path.read_text(encoding="utf-8"))
    }
    assert kinds and kinds <= DATA_CACHE_FOLDERS


def test_compare_names_differing_tables_and_ignores_timing_columns(tmp_path) -> None:
    from repro.runner import compare_runs, main

    def write(folder: str, accuracy: float, seconds: float) -> Path:
        path = tmp_path / folder / "chapter.json"
        path.parent.mkdir(exist_ok=True)
        tables = {"models": [{"model": "lenet5", "accuracy": accuracy, "train_seconds": seconds}], "params": []}
        path.write_text(json.dumps({"tables": tables, "seconds": seconds}))
        return path

    a, b = write("a", 0.8880, 12.0), write("b", 0.8880, 15.5)
    assert compare_runs(a.parent, b.parent) == []  # only timing differs
    assert main(["compare", str(a.parent), str(b.parent)]) == 0
    c = write("c", 0.8892, 12.0)
    lines = compare_runs(a.parent, c.parent)
    assert lines == ["chapter / models: 1 cells differ (first: row 0, accuracy: 0.888 vs 0.8892)"]
    assert main(["compare", str(a), str(c)]) == 1
    assert main(["compare", str(tmp_path / "none"), str(a)]) == 2


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_starting_ends_in_one_line(runs: Path, signum: int) -> None:
    """Ctrl-C or SIGTERM in a run's first seconds (interpreter start, imports, the runner's start-up) ends with at
    most the one "interrupted" line: no traceback from the import under way, no files."""
    for delay in (0.0, 0.5, 1.0, 2.0):
        proc = start_metrics_run(runs)
        time.sleep(delay)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        said = f"{signal.Signals(signum).name} at {delay} s: rc {proc.returncode}, stderr {err!r}"
        assert len(err.splitlines()) <= 1 and "Traceback" not in err and out == "", said
        if delay >= 1.0:  # Python is running (its own start takes a tenth of a second): the runner says so, once
            assert proc.returncode == 128 + signum and err.startswith("error: interrupted"), said
        else:  # perhaps killed before Python started: no word at all
            assert proc.returncode in (-signum, 128 + signum), said
            assert err == "" or err.startswith("error: interrupted"), said
        assert [p for p in runs.rglob("*") if p.is_file() and p.suffix != ".lock"] == [], said


def test_a_run_removes_temporary_files_a_killed_writer_left_in_the_data_folder(
    runs: Path, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM during training leaves `data/models/.<entry>.<pid>-<random>.tmp`; the next run removes it, and
    every temporary name whose writer is gone, but not a write in progress nor anything else."""
    data = tmp_path / "data"
    monkeypatch.setenv("REPRO_DATA", str(data))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that no process has now
    old = time.time() - 2 * 86400
    stale = [
        data / "models" / f".text-encoder-0123abcd.pt.{gone.pid}-k1ll3d_x.tmp",
        data / "models" / "mink" / f".main-0123abcd.{gone.pid}-k1ll3d_x.tmp" / "trainer" / "weights.bin",
        data / "features" / ".cnn-0123abcd.npz.a1b2c3d4.tmp",  # a name without a pid, two days old
        data / "models" / ".lenet-0123abcd.k1ll3d_x" / "config.json",  # a folder without a pid, two days old
    ]
    kept = [
        data / "models" / f".live-0123abcd.pt.{os.getpid()}-wr1t1ng_.tmp",  # this process is writing it
        data / "features" / ".fresh-0123abcd.npz.a1b2c3d4.tmp",  # no pid, and minutes old: perhaps being written
        data / "models" / "cnn-0123abcd.pt",
        data / "models" / ".notes.txt",
        data / "bigbench" / "task" / "task.json",
    ]
    for path in stale + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{half")
    for path in (stale[2], stale[3].parent):
        os.utime(path, (old, old))
    result = run(str(tiny), "smoke")
    assert result["cached"] is False
    assert [p for p in stale if p.exists()] == []
    assert not stale[1].parent.parent.exists() and not stale[3].parent.exists()
    assert [p for p in kept if not p.exists()] == []


@pytest.mark.parametrize("name", ["min_k", "seed", "lm_source"])
def test_a_null_parameter_is_refused_in_one_line(runs: Path, in_process, name: str) -> None:
    """`-p min_k null` would run with the profile's value (None means "the profile's value") under a cache key of its
    own: refused, with a line naming the parameter, before anything runs."""
    stored = stored_result(runs)
    for extra in (["--prepare-only"], []):
        code, out, err = in_process(
            "run", "metrics_by_hand", "--profile", "smoke", "-p", name, "null", *extra, REPRO_RUNS=str(runs)
        )
        assert code == 2 and out == "", err
        assert err == f"error: parameter {name!r}: null is not a value; leave {name} out for the profile's value\n"
    assert stored.read_text() == '{"notebook": "earlier"}\n' and not (runs / ".scratch").exists()


def test_a_signal_while_the_kernels_module_is_importing_still_unwinds(monkeypatch) -> None:
    """The CI race: SIGINT landed while `repro.kernels` was half imported (in sys.modules, no `kill_all` yet)."""
    import types

    from repro import runner

    monkeypatch.setitem(sys.modules, "repro.kernels", types.ModuleType("repro.kernels"))
    monkeypatch.setattr(signal, "signal", lambda *a: None)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    with pytest.raises(runner.Interrupted) as stopped:
        runner._interrupt(signal.SIGINT, None)
    assert stopped.value.code == 130
    logging.disable(logging.NOTSET)


def test_a_coroutine_a_signal_abandons_adds_no_warning_to_the_one_line(tmp_path) -> None:
    """A signal between a kernel client's coroutine being made and awaited abandons it; the warning Python gives
    when such a coroutine is collected must not follow the "interrupted" line (a CI run saw it once, at 2 s)."""
    script = (
        "import asyncio, signal\n"
        "from repro import runner\n"
        "async def start_kernel():\n    await asyncio.sleep(0)\n"
        "def abandoned(args):\n"
        "    pending = start_kernel()\n"
        "    raise runner.Interrupted(signal.SIGTERM)\n"
        "runner._main = abandoned\n"
        "raise SystemExit(runner.main(['run', 'metrics_by_hand', '--profile', 'smoke']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "REPRO_RUNS": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert proc.stderr.splitlines() == [
        "error: interrupted; the run in progress was discarded, earlier results are untouched"
    ], proc.stderr


def test_a_long_parameters_table_is_shown_two_parameters_a_row() -> None:
    import pandas as pd

    from repro.notebook import parameters_view
    from repro.results import MAX_ROWS

    short = pd.DataFrame({"parameter": list("abc"), "value": ["1", "2", "3"], "help": ["x", "y", "z"]})
    assert parameters_view(short).equals(short)
    names = [f"p{i}" for i in range(MAX_ROWS + 1)]
    long = pd.DataFrame({"parameter": names, "value": [str(i) for i in range(len(names))], "help": "h"})
    view = parameters_view(long)
    assert len(view) == 16 <= MAX_ROWS and list(view.columns) == [
        "parameter",
        "value",
        "help",
        "parameter ",
        "value ",
        "help ",
    ]
    assert view["parameter"].tolist() + view["parameter "].tolist()[:-1] == names  # every one, in order
    assert view["parameter "].iloc[-1] == ""  # the odd one out leaves the last right cell empty
