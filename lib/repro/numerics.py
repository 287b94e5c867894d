"""CPU float kernels pinned to one instruction set, so two CPUs of different kinds compute the same bits.

torch, oneDNN, MKL and NumPy each pick their kernels from the CPU they run on: AVX-512 on one machine, AVX2 on
another. The two paths sum in different orders (and NumPy's AVX-512 exp/log/power are other approximations), so
results differ in the last bits, and training amplifies those bits into different tables (a LeNet-5 accuracy of
0.8880 in one cold build and 0.8892 in another). `pin_cpu_numerics` sets, before the libraries first read them,
the environment variables that make every CPU with AVX2 (Intel or AMD) take the same AVX2 path in torch's own kernels,
oneDNN and NumPy (MKL's float matmul is the exception, see PINS).

Each variable is set with `os.environ.setdefault`: a value set by the user wins. The variables are read lazily
(torch's dispatch and oneDNN at their first kernel, MKL at its first call) except NumPy's, read when NumPy is
imported: `import repro` before NumPy pins this process, and every child process (the runner's notebook kernels)
inherits the pins either way. OpenBLAS (NumPy's and SciPy's BLAS) is left to OPENBLAS_CORETYPE, which the build
machines set themselves.
"""

from __future__ import annotations

import os

__all__ = ["MEMORY", "PINS", "THREADS", "keep_freed_memory", "kernel_wait_policy", "pin_cpu_numerics"]

PINS: dict[str, str] = {
    # torch's own (ATen) vectorized kernels: the AVX2 build instead of the AVX-512 one
    "ATEN_CPU_CAPABILITY": "avx2",
    # oneDNN (torch's convolutions, LSTM, reorders): JIT kernels up to AVX2, never avx512_core
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    # MKL (torch's float matmul) is left to its own dispatch: MKL_CBWR=AVX2 is honoured only on Intel CPUs (on an
    # AMD CPU MKL ignores it, checked with mkl_cbwr_get on an AMD EPYC), and the one branch honoured on both,
    # COMPATIBLE (SSE2 kernels), made a SmolLM2-135M forward + backward 2.46x slower on this 2-core machine (5.66 s
    # vs 13.95 s), which the Min-K% and CRT chapters' CPU budgets cannot carry. Set MKL_CBWR=COMPATIBLE yourself
    # for float matmuls that are bit-identical across CPU kinds too; two runs on one kind of CPU agree without it.
    # NumPy's dispatched loops: no AVX-512 targets (its AVX-512 float64 exp, log, expm1, log1p, power differ in
    # the last bit from the AVX2/libm ones); the names are NumPy 2's target groups, unknown names are ignored
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    # str hashes, hence the iteration order of sets of strings, fixed in every child Python process (the runner's
    # notebook kernels); this process's own order was fixed when it started
    "PYTHONHASHSEED": "0",
}


# Not numerics but read the same way (when OpenMP starts, inherited by the kernels): on a busy machine, idle OpenMP
# threads sleep instead of spinning at their barriers (PASSIVE). The numbers are the same either way; the speed is not,
# and which policy wins depends on the load. On this 2-core machine a tiny-LLaMA training step (vocabulary 2,048,
# 16 x 64 tokens) took 25-27 ms with OpenMP's default policy and 39-48 ms with PASSIVE when idle, but 194-324 ms
# against 50-70 ms beside two busy processes; earlier, at load about 9, 3.19 s against 0.46 s. So PASSIVE is set only
# when the machine is busy as repro is first imported (the runner's process, whose kernels inherit the choice): a
# one-minute load average of at least the number of CPUs. The runner decides again for each notebook kernel it starts
# (`kernel_wait_policy`), so a long `make book` follows the load as it changes.
THREADS: dict[str, str] = {"OMP_WAIT_POLICY": "PASSIVE"}


BUSY_AT_IMPORT = False  # what `busy` said when `pin_cpu_numerics` ran
_UNSET = object()
USER_POLICY: object = _UNSET  # OMP_WAIT_POLICY as set before repro first pinned this process (None: not set)


def busy(load: float | None = None, cpus: int | None = None) -> bool:
    """Whether the machine is busy: the one-minute load average (or `load`) is at least the CPU count (or `cpus`)."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:
            return False
    return load >= (cpus or os.cpu_count() or 1)


# Not numerics either: glibc's malloc gives every block above its mmap threshold (at most 32 MiB by its own
# adjustment) back to the system when it is freed, so a training step that allocates and frees its logits and their
# gradients (a tiny LLaMA's 2,048 x 4,096 floats, SmolLM2's 1,024 x 49,152) page-faults them in again, zeroed, at
# every step. Keeping freed memory in the heap up to 1 GiB per block gives the same numbers (torch aligns every
# buffer to 64 bytes either way). On this 2-core machine, idle, a tiny-LLaMA step (vocabulary 4,096, 16 x 128
# tokens) took 103-124 ms with 33,000 page faults and 63-74 ms of system time per step against 63-71 ms with 400
# faults and about 1 ms (two alternating triples of fresh processes).
# Read by glibc when a process starts (the runner's kernels inherit the variables); `keep_freed_memory` applies them
# to the process that imports repro.
MEMORY: dict[str, str] = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**30)}
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3}  # glibc's M_TRIM_THRESHOLD, M_MMAP_THRESHOLD


def pin_cpu_numerics() -> dict[str, str]:
    """Set every variable of PINS and MEMORY (and THREADS on a busy machine) not already set (a user's value wins);
    return PINS' values now in force."""
    global BUSY_AT_IMPORT, USER_POLICY
    if USER_POLICY is _UNSET:
        USER_POLICY = os.environ.get("OMP_WAIT_POLICY")
    BUSY_AT_IMPORT = busy()
    for name, value in {**PINS, **(THREADS if BUSY_AT_IMPORT else {}), **MEMORY}.items():
        os.environ.setdefault(name, value)
    keep_freed_memory()
    return {name: os.environ[name] for name in PINS}


def kernel_wait_policy(load: float | None = None) -> str | None:
    """OMP_WAIT_POLICY for a notebook kernel started now (or at one-minute load `load`): the user's value when they
    set one before repro was imported, else PASSIVE on a busy machine and None (OpenMP's default) on an idle one."""
    if isinstance(USER_POLICY, str):
        return USER_POLICY
    return THREADS["OMP_WAIT_POLICY"] if busy(load) else None


def keep_freed_memory() -> bool:
    """Apply MEMORY's values now in force to this process's malloc (glibc only; elsewhere nothing happens). Returns
    whether glibc accepted both."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        return all(libc.mallopt(_MALLOPT[name], int(os.environ[name])) == 1 for name in MEMORY)
    except (OSError, AttributeError, ValueError, KeyError):
        return False
