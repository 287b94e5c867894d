"""Quiet runs: a successful run prints its result line and nothing a user could take for an error, and nothing of
the Trainer's printing reaches a page."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

# Every stderr line a successful run may print, with why. Anything else (a warning, a kernel's log line, a
# traceback) fails the test.
ALLOWED_STDERR = {
    # the runner's progress in a log (repro.progress.Monitor): a line per new section, at least once a minute
    "progress": re.compile(r"^[a-z_]+ · (starting|cell \d+/\d+)( · .+)? · elapsed \d+:\d\d$"),
}
# What the HF Trainer prints after each log (PrinterCallback, ProgressCallback): `{'loss': ...}`, `{'train_runtime': ...}`
TRAINER_PRINTS = re.compile(r"\{'(loss|train_runtime|train_loss|epoch|learning_rate|grad_norm)'")


def unexpected(stderr: str) -> list[str]:
    """The stderr lines no entry of ALLOWED_STDERR explains."""
    return [line for line in stderr.splitlines() if not any(p.match(line) for p in ALLOWED_STDERR.values())]


def page_text(notebook: Path) -> list[str]:
    """Every text output of an executed notebook: streams, and the text of results and displays."""
    texts = []
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                texts.append(f"{output['name']}: {''.join(output['text'])}")
            for kind, value in output.get("data", {}).items():
                if kind.startswith("text/"):
                    texts.append("".join(value))
    return texts


def test_every_parameters_cell_parses_for_papermill(caplog: pytest.LogCaptureFixture) -> None:
    """Papermill reads each parameters cell before it injects values; a line it cannot read (two `=`, one of them in
    the comment) costs a warning on every run ("Unable to parse line 19 'task_ood = None ...'")."""
    import jupytext
    from papermill.translators import PythonTranslator

    for source in sorted((ROOT / "notebooks").glob("*.py")):
        nb = jupytext.read(source)
        (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="papermill"):
            names = [p.name for p in PythonTranslator.inspect(cell)]
        assert [r.getMessage() for r in caplog.records] == [], source.name
        assert names[0] == "profile" and len(names) == len(cell.source.strip().splitlines()), source.name


def test_a_smoke_run_prints_only_its_result_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "repro", "run", "metrics_by_hand", "--profile", "smoke", "--force"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "REPRO_RUNS": str(runs)},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert re.fullmatch(r"metrics_by_hand \[smoke\]: \d+ tables \([0-9.]+ s\) -> .+/metrics_by_hand\.json", line)
    assert unexpected(proc.stderr) == [], proc.stderr
    texts = page_text(runs / "smoke" / "metrics_by_hand.ipynb")
    assert [t for t in texts if t.startswith("stderr: ")] == []  # warnings printed in the kernel land on the page
    assert [t for t in texts if TRAINER_PRINTS.search(t)] == []


def test_a_finished_kernel_is_shut_down_without_an_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jupyter_client interrupts a kernel before asking it to shut down; a kernel still finishing its last reply
    then logs "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel." after a run that succeeded (about one run
    in six of a small notebook). The runner's kernels are asked to shut down without it."""
    from repro.kernels import TrackedKernelManager

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    sent: list[int] = []

    async def session() -> None:
        manager = TrackedKernelManager(kernel_name="python3")
        signal_kernel = manager._async_signal_kernel

        async def record(signum: int) -> None:
            sent.append(signum)
            await signal_kernel(signum)

        manager._async_signal_kernel = record
        await manager.start_kernel(extra_arguments=["--IPKernelApp.log_level=ERROR"])
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=120)
            reply = await client.execute_interactive("x = 1", timeout=60)
            assert reply["content"]["status"] == "ok"
        finally:
            client.stop_channels()
            await manager.shutdown_kernel()
        assert not manager.has_kernel

    asyncio.run(session())
    assert sent == []


@pytest.mark.trains
@pytest.mark.parametrize("progress", [True, False])
def test_the_trainer_prints_no_logs(tmp_path: Path, capfd: pytest.CaptureFixture, progress: bool) -> None:
    """Continued pretraining through the HF Trainer prints no `{'train_runtime': ...}` (it reached the Min-K% page);
    its progress bar stays (repro.progress reports it in a runner's kernel)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from repro.mink import pretraining

    class Characters:
        """A tokenizer stand-in: one id per character, EOS 0."""

        eos_token_id = 0

        def __call__(self, docs, add_special_tokens=False):
            return {"input_ids": [[1 + ord(c) % 60 for c in d] for d in docs]}

    cfg = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    stats = pretraining.continue_pretraining(
        LlamaForCausalLM(cfg), Characters(), ["some text " * 8] * 4,
        pretraining.PretrainConfig(block_size=16, batch_size=2), tmp_path, progress=progress,
    )  # fmt: skip
    assert stats["steps"] >= 1
    out, err = capfd.readouterr()
    assert not TRAINER_PRINTS.search(out + err), out + err
    assert ("it/s]" in err or "s/it]" in err) == progress, err  # the bar, and only when asked for
