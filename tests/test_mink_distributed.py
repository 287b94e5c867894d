"""Min-K% continued pretraining under a launcher (issue 25): damaged checkpoints are never cache hits, FSDP saves a
full state dict, two CPU processes (gloo, DDP) train into one loadable cache entry, gradient checkpointing's flag."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from repro.mink import pretraining

DOCS = ["The quick brown fox jumps over the lazy dog.", "A short note about cats, dogs and their owners."] * 4


def tiny_base(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A random two-layer LLaMA with SmolLM2's tokenizer saved as a base model; REPRO_DATA moved under tmp_path."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from repro.pretrained import smollm2_path

    tok = AutoTokenizer.from_pretrained(smollm2_path())  # before REPRO_DATA moves: no second conversion
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_a_checkpoint_folder_without_config_or_weights_is_not_a_cache_hit(tmp_path, monkeypatch) -> None:
    base = tiny_base(tmp_path / "tiny", tmp_path, monkeypatch)
    cfg = pretraining.PretrainConfig(learning_rate=1e-3, block_size=16, batch_size=2)
    target = pretraining.checkpoint_dir("d", base, DOCS, cfg)
    target.mkdir(parents=True)
    (target / "train_stats.json").write_text(json.dumps({"steps": 99, "train_loss": 0.0}))  # a sharded FSDP save
    assert not pretraining.complete_checkpoint(target)
    _, stats = pretraining.cached_pretraining("d", base, DOCS, cfg)
    assert not stats["cached"] and stats["steps"] != 99  # retrained, not read back
    assert pretraining.complete_checkpoint(target) and (target / "config.json").is_file()
    _, again = pretraining.cached_pretraining("d", base, DOCS, cfg)
    assert again["cached"] and again["steps"] == stats["steps"]
    (target / "model.safetensors").unlink()  # weights lost: damaged again
    assert not pretraining.complete_checkpoint(target)
    _, third = pretraining.cached_pretraining("d", base, DOCS, cfg)
    assert not third["cached"] and pretraining.complete_checkpoint(target)


def test_fsdp_saves_a_full_state_dict_whatever_accelerate_config_chose() -> None:
    from accelerate.utils import FullyShardedDataParallelPlugin

    plugin = FullyShardedDataParallelPlugin(state_dict_type="SHARDED_STATE_DICT")
    assert "SHARDED_STATE_DICT" in str(plugin.state_dict_type)
    trainer = SimpleNamespace(
        is_fsdp_enabled=True, accelerator=SimpleNamespace(state=SimpleNamespace(fsdp_plugin=plugin))
    )
    pretraining.force_full_state_dict(trainer)
    assert "FULL_STATE_DICT" in str(plugin.state_dict_type)  # what Trainer.save_model needs to write the weights
    pretraining.force_full_state_dict(SimpleNamespace(is_fsdp_enabled=False))  # DDP or one process: nothing to do


def test_under_fsdp_only_rank_0_reads_the_weights_into_host_memory(monkeypatch) -> None:
    for var in ("ACCELERATE_USE_FSDP", "FSDP_CPU_RAM_EFFICIENT_LOADING", "FSDP_SYNC_MODULE_STATES"):
        monkeypatch.delenv(var, raising=False)
    pretraining.light_loading()  # one process, no FSDP: nothing changes
    assert "FSDP_CPU_RAM_EFFICIENT_LOADING" not in os.environ
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    pretraining.light_loading()
    # what transformers' from_pretrained (meta device off rank 0) and accelerate's FSDP plugin (rank 0's weights
    # broadcast when wrapping) read
    assert os.environ["FSDP_CPU_RAM_EFFICIENT_LOADING"] == "true" and os.environ["FSDP_SYNC_MODULE_STATES"] == "true"


def test_batch_size_is_the_global_batch_split_over_the_processes(monkeypatch) -> None:
    cfg = pretraining.PretrainConfig(batch_size=8)
    assert pretraining.per_device_batch(cfg) == 8
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert pretraining.per_device_batch(cfg) == 2  # same global batch, so the same cache key, on 1 or 4 GPUs
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ValueError, match="does not split over 3 processes") as err:
        pretraining.per_device_batch(cfg)
    assert "\n" not in str(err.value)
    ckpt = pretraining.PretrainConfig(gradient_checkpointing=True)
    assert pretraining.checkpoint_dir("x", "b", ["d"], cfg) != pretraining.checkpoint_dir("x", "b", ["d"], ckpt)
    same = pretraining.PretrainConfig(batch_size=8, gradient_checkpointing=True)
    assert pretraining.checkpoint_dir("x", "b", ["d"], cfg) == pretraining.checkpoint_dir("x", "b", ["d"], same)


def test_gradient_checkpointing_flag_reaches_the_trainer(tmp_path, monkeypatch) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=64,
        )
    )  # fmt: skip
    assert not pretraining.uses_gradient_checkpointing(pretraining.PretrainConfig(), model)  # auto: small model
    monkeypatch.setattr(pretraining, "LARGE_MODEL", 10)
    assert pretraining.uses_gradient_checkpointing(pretraining.PretrainConfig(), model)  # auto: "large" model

    class Chars:
        eos_token_id = 0

        def __call__(self, docs, add_special_tokens=False):
            return {"input_ids": [[1 + ord(c) % 60 for c in d] for d in docs]}

    stats = pretraining.continue_pretraining(
        model, Chars(), DOCS, pretraining.PretrainConfig(block_size=16, batch_size=2), tmp_path, progress=False
    )
    assert stats["steps"] >= 1 and model.is_activation_checkpointing


def test_two_cpu_processes_with_gloo_train_one_loadable_cache_entry(tmp_path, monkeypatch) -> None:
    """`torch.distributed.run` with two CPU processes: the Trainer runs DDP over gloo; rank 0 publishes a checkpoint
    with config.json and weights that from_pretrained loads, and the notebook's rerun is a cache hit."""
    from transformers import AutoModelForCausalLM

    base = tiny_base(tmp_path / "tiny", tmp_path, monkeypatch)
    cfg = pretraining.PretrainConfig(learning_rate=1e-3, block_size=16, batch_size=4)  # 2 per process
    command = pretraining.export_corpus("ddp", base, DOCS, cfg)
    args = command.split()[command.split().index("repro.mink.pretraining") + 1 :]
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    run = subprocess.run(
        [*launch, "-m", "repro.mink.pretraining", *args], env=env, capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr[-3000:]
    target = pretraining.checkpoint_dir("ddp", base, DOCS, cfg)
    assert pretraining.complete_checkpoint(target), sorted(os.listdir(target))
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no half-written leftovers
    stats = json.loads((target / "train_stats.json").read_text())
    blocks = stats["train_tokens"] // 16
    assert stats["processes"] == 2 and stats["steps"] == -(-blocks // 4)  # global batch 4 = 2 x 2 processes
    loaded = AutoModelForCausalLM.from_pretrained(target)
    base_model = AutoModelForCausalLM.from_pretrained(base)
    assert not torch.equal(loaded.lm_head.weight, base_model.lm_head.weight)  # trained weights, not the base
    model, hit = pretraining.cached_pretraining("ddp", base, DOCS, cfg)  # the notebook, one process
    assert hit["cached"] and hit["steps"] == stats["steps"]
    assert torch.equal(model.lm_head.weight, loaded.lm_head.weight)
