"""Cold rebuilds are identical: every kind of model the book trains, and every DeepGini attack, gives the same bits
in two fresh Python processes.

Each process imports repro first (so its CPU pins apply, see repro.numerics), starts with a different str hash seed
and, before each kind, scrambles the global random generators (random, NumPy, torch) with fresh entropy: what a
model ends up as may depend on its seeds alone, never on what ran before it in the notebook (another model trained,
or loaded from the cache instead) nor on the order of a set. The kinds run through the book's own training
functions, seeded as the book's callers seed them, at tiny sizes; the two processes' SHA-256 digests of every
parameter tensor (and of every adversarial array) must match bit for bit.

This compares two processes on one machine. That two CPUs of different kinds compute the same bits is what the
pins are for; test_pins_apply_in_a_fresh_process checks that they are in force.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MARK = "DIGESTS "
PIN_NAMES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES", "PYTHONHASHSEED")


def _env(hash_seed: str) -> dict[str, str]:
    """This environment without the CPU pins (the subprocess's `import repro` sets them), at str hash seed `hash_seed`.

    OpenMP threads sleep instead of spinning at their barriers (OMP_WAIT_POLICY, unless set): the same numbers, but
    on a shared machine spinning threads made these tiny models about six times slower."""
    env = {k: v for k, v in os.environ.items() if k not in PIN_NAMES}
    env["REPRO_THREADS"] = "2"  # the book's thread count (the suite's kernels use one), so two threads agree too
    return {"OMP_WAIT_POLICY": "PASSIVE", **env, "PYTHONHASHSEED": hash_seed, "TQDM_DISABLE": "1"}


def _python(code: str, hash_seed: str = "0", timeout: int = 300, **extra: str) -> str:
    """stdout of `python -c code` in a fresh process; fails the test with its stderr if it fails."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**_env(hash_seed), **extra},
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# ---------------------------------------------------------------------------------------------------------------------
# What a fresh process runs (`python -c "import repro; ...; run_all()"`): each kind returns {tensor name: SHA-256}.


def _digest(array) -> str:
    """SHA-256 of an array's or tensor's bytes (with its dtype and shape)."""
    import hashlib

    import numpy as np

    if hasattr(array, "detach"):
        array = array.detach().cpu().contiguous().numpy()
    array = np.ascontiguousarray(array)
    return hashlib.sha256(f"{array.dtype}{array.shape}".encode() + array.tobytes()).hexdigest()


def _weights(model) -> dict[str, str]:
    """Digest of every tensor of a model's state dict (parameters and buffers)."""
    return {name: _digest(value) for name, value in model.state_dict().items()}


def _scramble() -> None:
    """Fresh entropy into the global generators: only a kind's own seeds may decide its result."""
    import random

    import numpy as np
    import torch

    entropy = int.from_bytes(os.urandom(4), "little")
    random.seed(entropy)
    np.random.seed(entropy)
    torch.manual_seed(entropy)


def _images(n: int = 384, seed: int = 0):
    """Grey 28x28 images of 10 classes (a fixed template per class plus noise) in [0, 1], and their labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    templates = rng.random((10, 1, 28, 28))
    y = rng.integers(0, 10, n)
    x = np.clip(0.7 * templates[y] + 0.3 * rng.random((n, 1, 28, 28)), 0, 1)
    return x.astype(np.float32), y.astype(np.int64)


def _sentences(n: int = 64, seed: int = 0):
    """A word vocabulary and `n` encoded sentences of 3 to 10 words."""
    import numpy as np

    from repro.crt.language_model import Vocab

    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)]
    token_lists = [[words[j] for j in rng.integers(0, len(words), rng.integers(3, 11))] for _ in range(n)]
    vocab = Vocab.build(token_lists)
    return vocab, [vocab.encode(t) for t in token_lists]


def _deepgini_lenet1() -> dict[str, str]:
    from repro.deepgini import nets

    x, y = _images()
    out = {}
    for recipe in ("adam", "artifact"):  # the chapter's own recipe and the artifact's SGD with Nesterov momentum
        model = nets.build("lenet1", x.shape[1:], 10, seed=0)
        trained = nets._fit(model, x, y, epochs=1, recipe=recipe, seed=0, desc=recipe)
        out |= {f"{recipe} {k}": v for k, v in _weights(trained).items()}
    return out


def _rmd(kind: str) -> dict[str, str]:
    import torch

    from repro import training
    from repro.rmd import features, nets

    x, y = _images(256)
    images = torch.as_tensor(x)
    if kind == "cnn":  # as features.finetuned_model builds and trains it
        model = features.seeded_init(lambda: nets.SmallCNN(10, 16), 0)
        training.fit(model, images, torch.as_tensor(y), training.classification_loss, 1, seed=0)
    else:  # as features.label_free_image_encoder does (noise drawn from torch's global generator)
        model = features.seeded_init(lambda: nets.ConvAutoencoder(16), 0)
        training.fit(model, images, images, training.reconstruction_loss, 1, seed=0)
    return _weights(model)


def _crt(kind: str) -> dict[str, str]:
    import torch

    from repro.crt import gpt, trainers
    from repro.crt.language_model import LSTMLM

    vocab, data = _sentences()
    private = kind.endswith("dpsgd")
    torch.manual_seed(0)  # as crt.runs seeds every run before building its model
    if kind.startswith("lstm"):
        model = LSTMLM(len(vocab), emb=16, hidden=16, private=private)
        cfg = trainers.TrainConfig(epochs=1, batch=16, dp_batch=16, delta=1e-3, seed=0)
    else:
        model = gpt.small_gpt2(vocab, n_positions=16, n_embd=16, n_layer=1, n_head=2)
        cfg = trainers.TrainConfig(
            epochs=1, lr=1e-3, batch=16, dp_lr=1e-3, dp_batch=16, clip=1.0, delta=1e-3, seed=0, optimizer="adam"
        )
    if private:
        model, epsilon = trainers.train_dpsgd(model, data, cfg)
        return {**_weights(model), "epsilon": _digest(__import__("numpy").float64(epsilon))}
    return _weights(trainers.train_nonprivate(model, data, cfg))


def _doremi() -> dict[str, str]:
    import numpy as np

    from repro.data_selection import doremi

    rng = np.random.default_rng(0)
    blocks = doremi.DomainBlocks([rng.integers(0, 64, 32 * 12), rng.integers(0, 64, 32 * 9) // 2], 32)
    small = {"vocab_size": 64, "d_model": 16, "n_layers": 1, "n_heads": 2, "seq_len": 32}
    reference = doremi.tiny_llama(**small, seed=0)
    history = doremi.train_lm(reference, blocks, [0.5, 0.5], steps=4, batch_size=4, lr=1e-3, seed=0, progress=False)
    proxy = doremi.tiny_llama(**small, seed=1)
    _, alphas = doremi.train_proxy_doremi(proxy, reference, blocks, 4, batch_size=4, lr=1e-3, seed=0, progress=False)
    return {
        **{f"reference {k}": v for k, v in _weights(reference).items()},
        **{f"proxy {k}": v for k, v in _weights(proxy).items()},
        "reference losses": _digest(history["loss"]),
        "domain weights": _digest(alphas),
    }


class _Chars:
    """A tokenizer stand-in: one id per character, EOS 0."""

    eos_token_id = 0

    def __call__(self, docs, add_special_tokens=False):
        return {"input_ids": [[1 + ord(c) % 60 for c in d] for d in docs]}


def _mink() -> dict[str, str]:
    import tempfile

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from repro.mink import pretraining

    cfg = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)  # the book starts from a pretrained checkpoint; a tiny random one here
    model = LlamaForCausalLM(cfg)
    docs = [f"document {i}: " + "some words of text " * (2 + i % 3) for i in range(12)]
    with tempfile.TemporaryDirectory() as scratch:
        cfg = pretraining.PretrainConfig(block_size=16, batch_size=2, seed=0)
        pretraining.continue_pretraining(model, _Chars(), docs, cfg, scratch, progress=False)
    return _weights(model)


def _attacks() -> dict[str, str]:
    from repro.deepgini import attacks, nets

    x, y = _images()
    model = nets._fit(nets.build("lenet1", x.shape[1:], 10, seed=0), x, y, 1, "adam", 0, "attacked model")
    clf = attacks.classifier(model, x.shape[1:], 10)
    out = {"model": _digest(next(iter(model.parameters())))}
    for attack in attacks.ARTIFACT:  # FGSM, BIM, JSMA, C&W-L2 as the chapter runs them
        out[attack] = _digest(attacks.adversarial_examples(clf, x[:6], y[:6], attack))
    return out


RUNS = {
    "deepgini lenet1": _deepgini_lenet1,
    "rmd cnn": lambda: _rmd("cnn"),
    "rmd autoencoder": lambda: _rmd("autoencoder"),
    "crt lstm": lambda: _crt("lstm"),
    "crt lstm dpsgd": lambda: _crt("lstm dpsgd"),
    "crt gpt": lambda: _crt("gpt"),
    "crt gpt dpsgd": lambda: _crt("gpt dpsgd"),
    "doremi llama": _doremi,
    "mink pretraining": _mink,
    "deepgini attacks": _attacks,
}
KINDS = tuple(RUNS)


def run_all() -> None:
    """In a fresh process (after `import repro`): every kind's digests, or its error, as one JSON line on stdout."""
    import logging
    import traceback
    import warnings

    import torch
    from threadpoolctl import threadpool_limits

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    threads = int(os.environ.get("REPRO_THREADS", "2"))  # as repro.start sets them
    threadpool_limits(limits=threads)
    torch.set_num_threads(threads)
    out: dict[str, dict[str, str]] = {}
    for kind in KINDS:
        _scramble()
        try:
            out[kind] = RUNS[kind]()
        except Exception:  # one broken kind must not hide the others
            out[kind] = {"error": traceback.format_exc()}
    print(MARK + json.dumps(out))


# ---------------------------------------------------------------------------------------------------------------------
# The tests.


@pytest.fixture(scope="module")
def two_runs() -> list[dict[str, dict[str, str]]]:
    """The digests of two fresh processes, one after the other, at two different str hash seeds."""
    code = f"import repro, sys; sys.path.insert(0, {str(TESTS)!r}); import test_determinism as t; t.run_all()"
    runs = []
    for hash_seed in ("1", "2"):
        lines = [line for line in _python(code, hash_seed=hash_seed).splitlines() if line.startswith(MARK)]
        assert lines, "the worker printed no digests"
        runs.append(json.loads(lines[-1][len(MARK) :]))
    return runs


@pytest.mark.parametrize("kind", KINDS)
def test_two_fresh_processes_give_the_same_bits(two_runs, kind):
    first, second = (run[kind] for run in two_runs)
    assert "error" not in first, first.get("error")
    assert "error" not in second, second.get("error")
    assert first.keys() == second.keys() and first
    differing = sorted(name for name in first if first[name] != second[name])
    assert differing == [], f"{kind}: {len(differing)} of {len(first)} tensors differ, e.g. {differing[:5]}"


def _has_avx2() -> bool:
    """Whether this is an x86-64 Linux machine whose CPU has AVX2 (what the pins target)."""
    try:
        return platform.machine() in ("x86_64", "AMD64") and " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not _has_avx2(), reason="the pins target x86-64 CPUs with AVX2")
def test_pins_apply_in_a_fresh_process():
    """torch's dispatch and oneDNN take the pinned paths after a plain `import repro`; MKL keeps its own dispatch."""
    assert _python("import repro, torch; print(torch.backends.cpu.get_cpu_capability())").strip() == "AVX2"
    probe = (
        "import ctypes, os, repro, torch\n"
        "torch.nn.functional.conv2d(torch.ones(64, 1, 28, 28), torch.ones(6, 1, 5, 5), padding=2)\n"
        "lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cpu.so'))\n"
        "print('mkl branch', lib.mkl_serv_cbwr_get(1) if hasattr(lib, 'mkl_serv_cbwr_get') else 'unknown')\n"
    )
    out = _python(probe, ONEDNN_VERBOSE="1")
    isa = [line for line in out.splitlines() if ",isa:" in line]
    assert isa and isa[0].endswith("isa:Intel AVX2"), isa
    branch = out.strip().splitlines()[-1]
    assert branch != "mkl branch 3", branch  # 3 would be MKL_CBWR_COMPATIBLE, 2.5x slower on LLM steps


def test_openmp_threads_sleep_on_a_busy_machine_unless_the_user_says_otherwise():
    """`import repro` sets OMP_WAIT_POLICY=PASSIVE only when the one-minute load reaches the CPU count; a user's value
    wins either way."""
    from repro import numerics

    assert numerics.busy(load=2.0, cpus=2) and numerics.busy(load=9.0, cpus=2)
    assert not numerics.busy(load=1.9, cpus=2) and not numerics.busy(load=0.0, cpus=16)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    probe = "import os, repro; print(os.environ.get('OMP_WAIT_POLICY'), repro.numerics.BUSY_AT_IMPORT)"
    policy, was_busy = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True
    ).stdout.split()
    assert policy == ("PASSIVE" if was_busy == "True" else "None")
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout
    assert out.split()[0] == "ACTIVE"


def test_each_notebook_kernel_follows_the_load_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner decides the kernel's OpenMP policy when it starts the kernel, not when repro was imported."""
    from repro import numerics, runner

    monkeypatch.setattr(numerics, "USER_POLICY", None)
    assert numerics.kernel_wait_policy(load=float(os.cpu_count() or 1)) == "PASSIVE"  # load = CPUs: busy
    assert numerics.kernel_wait_policy(load=0.1) is None
    monkeypatch.setattr(numerics, "USER_POLICY", "ACTIVE")
    assert numerics.kernel_wait_policy(load=9.0) == numerics.kernel_wait_policy(load=0.0) == "ACTIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    with runner._environ(OMP_WAIT_POLICY=None, REPRO_PROBE="1"):  # None unsets for the block
        assert "OMP_WAIT_POLICY" not in os.environ and os.environ["REPRO_PROBE"] == "1"
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE" and "REPRO_PROBE" not in os.environ


STEPS_PROBE = (
    "import repro, torch\n"
    "from repro.data_selection import doremi\n"
    "torch.set_num_threads(2)\n"
    "m = doremi.tiny_llama(512, d_model=32, n_layers=1, seq_len=64, seed=0)\n"
    "opt = torch.optim.AdamW(m.parameters(), lr=1e-2)\n"
    "ids = torch.randint(0, 512, (8, 64), generator=torch.Generator().manual_seed(0))\n"
    "for _ in range(3):\n"
    "    loss = doremi.per_token_loss(m, ids).mean(); opt.zero_grad(); loss.backward(); opt.step()\n"
    "    print(loss.item().hex())\n"
    "import os; print(os.environ['MALLOC_MMAP_THRESHOLD_'], repro.numerics.keep_freed_memory())\n"
)


@pytest.mark.skipif(platform.system() != "Linux", reason="glibc's malloc")
def test_freed_memory_stays_in_the_heap_with_the_same_numbers():
    """A fresh process gets the 1 GiB mmap and trim thresholds from `import repro` (glibc accepts them), a user's
    value wins, and three tiny-LLaMA training steps give the same bits with glibc's defaults (128 KiB) and ours."""
    ours = _python(STEPS_PROBE).splitlines()
    glibc = _python(STEPS_PROBE, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072").splitlines()
    assert ours[-1] == f"{2**30} True" and glibc[-1] == "131072 True"
    assert ours[:3] == glibc[:3] and len(set(ours[:3])) == 3


def test_a_user_setting_wins(monkeypatch):
    from repro import numerics

    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    for name in numerics.PINS:
        if name != "ATEN_CPU_CAPABILITY":
            monkeypatch.delenv(name, raising=False)
    pins = numerics.pin_cpu_numerics()
    assert pins["ATEN_CPU_CAPABILITY"] == "default" and pins["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert tuple(numerics.PINS) == PIN_NAMES


def test_top_k_ties_go_to_the_lowest_indices():
    """DSIR's deterministic top-k: equal weights at the k-th place keep the lowest indices (not argpartition's pick,
    which depends on the CPU's NumPy selection kernel)."""
    import numpy as np

    from repro.data_selection import dsir

    weights = np.array([0.0, 2.0, 1.0, 1.0, 1.0, 1.0, 3.0, 1.0])
    assert dsir.top_k(weights, 4).tolist() == [6, 1, 2, 3]


def test_attacks_leave_the_global_generators_as_they_were():
    """The seeded block inside adversarial_examples draws the same numbers every time and restores the state."""
    import numpy as np
    import torch

    from repro.deepgini import attacks

    np.random.seed(123)
    torch.manual_seed(123)
    with attacks._seeded_globals(attacks.ATTACK_SEED):
        first = np.random.random(), float(torch.rand(1))
    with attacks._seeded_globals(attacks.ATTACK_SEED):
        assert (np.random.random(), float(torch.rand(1))) == first
    after = np.random.random(), float(torch.rand(1))
    np.random.seed(123)
    torch.manual_seed(123)
    assert (np.random.random(), float(torch.rand(1))) == after


def test_seeding_turns_on_deterministic_kernels_without_importing_the_compiler():
    """seed_everything sets torch's deterministic flag (warn only) as use_deterministic_algorithms does for eager
    kernels, without the 2 s import of torch._inductor; no chapter calls torch.compile, whose flag that import sets."""
    probe = (
        "import sys, torch\n"
        "from repro.notebook import seed_everything\n"
        "seed_everything(3)\n"
        "print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),\n"
        "      'torch._inductor' in sys.modules, torch.initial_seed())\n"
    )
    assert _python(probe).split() == ["True", "True", "False", "3"]
    lib = TESTS.parent / "lib" / "repro"
    assert not [p for p in lib.rglob("*.py") if "torch.compile(" in p.read_text()]
