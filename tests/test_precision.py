"""Training precision: float32 on every CPU, bf16 only where a GPU supports it natively (issue: bf16 on AVX2 CPUs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from repro import training
from repro.mink import pretraining

LIB = Path(training.__file__).parent


def test_cpu_training_is_float32_whatever_is_requested(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training.training_precision(True) == "float32"
    assert training.training_precision(False) == "float32"


def test_gpu_bf16_only_where_the_gpu_supports_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert training.training_precision(True) == "float32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert training.training_precision(True) == "bf16 mixed"
    assert training.training_precision(False) == "float32"


def test_no_training_path_enables_a_reduced_precision_by_itself():
    """Autocast and half-precision casts live only behind training_precision: no module turns them on for a CPU."""
    pattern = re.compile(r"torch\.autocast\(|\.half\(\)|\.bfloat16\(\)|dtype=torch\.(bfloat16|float16)")
    offenders = [
        f"{p.relative_to(LIB)}:{i}"
        for p in sorted(LIB.rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


class _Words:
    """A tokenizer stand-in: one id per character, EOS 0."""

    eos_token_id = 0

    def __call__(self, docs, add_special_tokens=False):
        return {"input_ids": [[1 + ord(c) % 60 for c in d] for d in docs]}


@pytest.mark.trains
def test_continued_pretraining_on_this_cpu_runs_in_float32(tmp_path, monkeypatch):
    """A real Trainer step on a tiny LLaMA: no CPU autocast is active and activations are float32, even when bf16 is
    requested (the config's default)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    seen = []
    model.model.layers[0].register_forward_hook(
        lambda mod, inp, out: seen.append(
            (torch.is_autocast_enabled("cpu"), (out[0] if isinstance(out, tuple) else out).dtype)
        )
    )
    stats = pretraining.continue_pretraining(
        model, _Words(), ["some text " * 8] * 4, pretraining.PretrainConfig(block_size=16, batch_size=2),
        tmp_path, progress=False,
    )  # fmt: skip
    assert stats["precision"] == "float32" and stats["steps"] >= 1
    assert seen and all(not autocast and dtype == torch.float32 for autocast, dtype in seen)


def test_checkpoint_key_names_the_precision(monkeypatch):
    """A checkpoint trained in bf16 on a GPU is never read back as a CPU float32 run (and the reverse)."""
    cfg = pretraining.PretrainConfig()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = pretraining.checkpoint_dir("x", "base", ["doc"], cfg)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    gpu = pretraining.checkpoint_dir("x", "base", ["doc"], cfg)
    assert cpu != gpu
