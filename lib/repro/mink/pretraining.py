"""Continued causal-LM pretraining with the Hugging Face Trainer, checkpoints cached by their inputs.

Multi-GPU (the `paper` profile): the notebook exports each corpus (export_corpus), and
`accelerate launch -m repro.mink.pretraining ...` trains it under FSDP/DDP (as set by `accelerate config`)
straight into the cache the notebook reads."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import cache
from ..atomic import atomic_dir, write_json
from ..training import training_precision


@dataclass(frozen=True)
class PretrainConfig:
    """One epoch of continued pretraining at a constant learning rate."""

    learning_rate: float = 1e-4
    block_size: int = 256
    batch_size: int = 4
    epochs: int = 1
    seed: int = 0
    bf16: bool = True  # bf16 mixed precision on a GPU with bf16 (paper); float32 on any CPU (training_precision)


class _Blocks(torch.utils.data.Dataset):
    """Fixed-length blocks of one concatenated token stream (labels = inputs, as in causal-LM training)."""

    def __init__(self, blocks: torch.Tensor):
        self.blocks = blocks

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


def token_blocks(tokenizer: Any, docs: Sequence[str], block_size: int) -> torch.Tensor:
    """Documents tokenized, each closed by EOS, concatenated and cut into full blocks (the tail is kept, padded by wrap)."""
    ids = tokenizer(list(docs), add_special_tokens=False)["input_ids"]
    stream = np.fromiter((t for doc in ids for t in (*doc, tokenizer.eos_token_id)), dtype=np.int64)
    if len(stream) < block_size:
        raise ValueError(f"the corpus has {len(stream)} tokens, fewer than one block of {block_size}")
    n = -(-len(stream) // block_size)
    stream = np.resize(stream, n * block_size)  # the last block wraps to the start instead of being dropped
    return torch.from_numpy(stream.reshape(n, block_size))


def plain_progress(trainer: Any) -> None:
    """Swap the Trainer's notebook progress table (HTML on the page) for a text progress bar on stderr."""
    from transformers.trainer_callback import ProgressCallback
    from transformers.utils.notebook import NotebookProgressCallback

    if trainer.pop_callback(NotebookProgressCallback) is not None:
        trainer.add_callback(ProgressCallback)


def continue_pretraining(
    model: Any,
    tokenizer: Any,
    docs: Sequence[str],
    cfg: PretrainConfig,
    output_dir: str | Path,
    progress: bool = True,
    save_to: Path | None = None,
) -> dict[str, float]:
    """Train `model` in place for cfg.epochs over the token blocks of `docs` (Trainer, constant lr); returns stats.

    save_to: where the Trainer writes the full checkpoint (it gathers FSDP shards under `accelerate launch`)."""
    from transformers import Trainer, TrainingArguments

    blocks = token_blocks(tokenizer, docs, cfg.block_size)
    precision = training_precision(cfg.bf16)
    args = TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        num_train_epochs=cfg.epochs,
        seed=cfg.seed,
        data_seed=cfg.seed,
        save_strategy="no",
        report_to=[],
        logging_steps=10**9,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        bf16=precision == "bf16 mixed",
    )
    model.train()
    start = time.perf_counter()
    trainer = Trainer(model=model, args=args, train_dataset=_Blocks(blocks))
    plain_progress(trainer)
    result = trainer.train()
    seconds = time.perf_counter() - start
    model.eval()
    if save_to is not None:
        trainer.save_model(str(save_to))
    tokens = int(blocks.numel()) * cfg.epochs
    return {
        "train_tokens": tokens,
        "steps": int(result.global_step),
        "train_seconds": round(seconds, 2),
        "tokens_per_second": round(tokens / seconds, 1),
        "train_loss": round(float(result.training_loss), 4),
        "precision": precision,
    }


def checkpoint_dir(name: str, base: str | Path, docs: Sequence[str], cfg: PretrainConfig) -> Path:
    """Cache folder of a continued-pretraining run, keyed by base model, corpus text, config and the precision used."""
    return cache.entry_path("models/mink", name, str(base), list(docs), asdict(cfg), training_precision(cfg.bf16))


def cached_pretraining(
    name: str, base: str | Path, docs: Sequence[str], cfg: PretrainConfig, store: bool = True
) -> tuple[Any, dict[str, Any]]:
    """(model, stats) trained from `base` on `docs`, loaded from the cache when the same inputs ran before.

    store=False (smoke runs) trains without keeping a checkpoint."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = checkpoint_dir(name, base, docs, cfg)
    if (target / "train_stats.json").exists():
        stats = json.loads((target / "train_stats.json").read_text())
        model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32).eval()
        return model, {**stats, "cached": True}
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    if not store or int(os.environ.get("RANK", "0")) != 0:  # under accelerate, only rank 0 publishes the checkpoint
        with tempfile.TemporaryDirectory(prefix="pretrain-") as scratch:
            stats = continue_pretraining(
                model, tokenizer, docs, cfg, scratch, save_to=Path(scratch) / "model" if store else None
            )
        return model, {**stats, "cached": False}
    with atomic_dir(target) as tmp:
        stats = continue_pretraining(model, tokenizer, docs, cfg, Path(tmp) / "trainer", save_to=Path(tmp))
        shutil.rmtree(Path(tmp) / "trainer", ignore_errors=True)
        write_json(Path(tmp) / "train_stats.json", stats)
    return model, {**stats, "cached": False}


def export_corpus(name: str, base: str | Path, docs: Sequence[str], cfg: PretrainConfig) -> str:
    """Write one run's corpus beside the checkpoint cache; return the `accelerate launch` line that fills that cache."""
    target = checkpoint_dir(name, base, docs, cfg)
    corpus = target.parent / f"{target.name}.corpus.json"
    write_json(corpus, list(docs))
    return (
        f"accelerate launch -m repro.mink.pretraining --name {name} --base {base} --corpus {corpus} "
        f"--lr {cfg.learning_rate:g} --block-size {cfg.block_size} --batch-size {cfg.batch_size} --seed {cfg.seed}"
        + ("" if cfg.bf16 else " --float32")
    )


def main(argv: list[str] | None = None) -> int:
    """CLI for `accelerate launch -m repro.mink.pretraining`: trains one exported corpus into the notebook's checkpoint cache."""
    parser = argparse.ArgumentParser(prog="repro.mink.pretraining", description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="experiment name (part of the cache folder)")
    parser.add_argument("--base", required=True, help="model path or Hub id")
    parser.add_argument("--corpus", required=True, type=Path, help="JSON file: a list of document strings")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--block-size", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--float32", action="store_true", help="train in float32 instead of bf16 mixed precision")
    args = parser.parse_args(argv)
    docs = json.loads(args.corpus.read_text())
    cfg = PretrainConfig(args.lr, args.block_size, args.batch_size, 1, args.seed, not args.float32)
    cached_pretraining(args.name, args.base, docs, cfg)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
