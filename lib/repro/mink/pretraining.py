"""Continued causal-LM pretraining with the Hugging Face Trainer, checkpoints cached by their inputs.

Multi-GPU (the `paper` profile): the notebook exports each corpus (export_corpus), and
`accelerate launch -m repro.mink.pretraining ...` trains it under FSDP/DDP (as set by `accelerate config`)
straight into the cache the notebook reads. Under FSDP the state dict type is forced to FULL_STATE_DICT, so the
main process writes one loadable checkpoint (config.json and weights) whatever `accelerate config` chose.
batch_size is the global batch, split over the processes, so one cache key is one global batch whatever the
number of GPUs.

A burn-in (cached_pretraining with keep_state) keeps the optimizer's state beside its weights; a run started from it
(`start`) loads both, so the items it inserts meet an optimizer past Adam's start-up (bias correction and the first
steps' large moments), as they would deep into a real continued-pretraining run."""

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

import torch

from .. import cache
from ..atomic import atomic_dir, write_json
from ..training import training_precision


@dataclass(frozen=True)
class PretrainConfig:
    """One epoch of continued pretraining at a constant learning rate."""

    learning_rate: float = 1e-4
    block_size: int = 1024  # long enough that every inserted item fits whole in one block (pack_blocks)
    batch_size: int = 1  # the global batch: split over the processes of a launched run (per_device_batch)
    epochs: int = 1
    seed: int = 0
    bf16: bool = True  # bf16 mixed precision on a GPU with bf16 (paper); float32 on any CPU (training_precision)
    gradient_checkpointing: bool | None = None  # None: on for models over LARGE_MODEL parameters (LLaMA-7B at paper)


LARGE_MODEL = 1_000_000_000  # parameters above which activations are recomputed (gradient checkpointing)
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def world_size() -> int:
    """Processes of this run (WORLD_SIZE, set by `accelerate launch` and torchrun; 1 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def per_device_batch(cfg: PretrainConfig) -> int:
    """Sequences per process and step: the global batch over the processes (it must divide evenly)."""
    if cfg.batch_size % world_size():
        raise ValueError(
            f"batch_size {cfg.batch_size} (the global batch) does not split over {world_size()} processes: "
            "launch with a number of processes that divides it"
        )
    return cfg.batch_size // world_size()


def is_main_process() -> bool:
    """Rank 0 of a launched run, or the only process."""
    return int(os.environ.get("RANK", "0")) == 0


OPTIMIZER_STATE = ("optimizer.pt", "scheduler.pt")  # the Trainer's names for its optimizer and scheduler states


def has_optimizer_state(folder: Path) -> bool:
    """Whether a checkpoint keeps its optimizer state (a burn-in): the Trainer's optimizer.pt (one process or DDP)
    or its FSDP optimizer folder, and scheduler.pt."""
    optimizer = (folder / OPTIMIZER_STATE[0]).is_file() or any(
        f.is_dir() and f.name.startswith("optimizer") for f in folder.glob("optimizer*")
    )
    return optimizer and (folder / OPTIMIZER_STATE[1]).is_file()


def complete_checkpoint(folder: Path, keep_state: bool = False) -> bool:
    """A cached checkpoint is usable only with its config.json, a weights file and train_stats.json (and, for a
    burn-in, its optimizer state).

    A folder with only train_stats.json is what a sharded FSDP save used to leave: damaged, never a hit."""
    return (
        all((folder / f).is_file() for f in ("config.json", "train_stats.json"))
        and any((folder / f).is_file() for f in WEIGHT_FILES)
        and (not keep_state or has_optimizer_state(folder))
    )


def uses_gradient_checkpointing(cfg: PretrainConfig, model: Any) -> bool:
    """cfg.gradient_checkpointing, or (None) whether the model is large enough to need it."""
    if cfg.gradient_checkpointing is not None:
        return cfg.gradient_checkpointing
    return sum(p.numel() for p in model.parameters()) > LARGE_MODEL


def under_fsdp() -> bool:
    """Whether this process was launched for FSDP (`accelerate launch` with FSDP configured)."""
    return os.environ.get("ACCELERATE_USE_FSDP", "false").lower() in ("1", "true")


def light_loading() -> None:
    """Under FSDP, read the full weights into host memory on each node's rank 0 only: the other ranks build the model
    on the meta device and receive rank 0's weights when FSDP wraps it (sync_module_states), instead of every
    process holding a float32 copy (28 GB each for LLaMA-7B). Transformers checks this at from_pretrained, with the
    process group already up, so it is started here."""
    if not under_fsdp():
        return
    os.environ["FSDP_CPU_RAM_EFFICIENT_LOADING"] = "true"
    os.environ["FSDP_SYNC_MODULE_STATES"] = "true"
    from accelerate import PartialState

    PartialState()  # initializes the process group of a launched run (nothing on one process)


def force_full_state_dict(trainer: Any) -> None:
    """Under FSDP, make the Trainer save one full state dict on the main process instead of per-rank shards."""
    if getattr(trainer, "is_fsdp_enabled", False):
        trainer.accelerator.state.fsdp_plugin.set_state_dict_type("FULL_STATE_DICT")


IGNORE = -100  # label of a padding position: no loss, no gradient


class _Blocks(torch.utils.data.Dataset):
    """Fixed-length blocks of one token stream in corpus order (labels = inputs; padding masked out of the loss)."""

    def __init__(self, blocks: torch.Tensor, mask: torch.Tensor):
        self.blocks, self.mask = blocks, mask

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        labels = self.blocks[i].masked_fill(self.mask[i] == 0, IGNORE)
        return {"input_ids": self.blocks[i], "attention_mask": self.mask[i], "labels": labels}


@dataclass
class Packed:
    """A corpus cut into blocks: token ids, attention mask (0 = padding of the last block) and, per document, the
    block that holds its first token (with a sequential sampler and batch 1, the optimizer step that trains it)."""

    ids: torch.Tensor
    mask: torch.Tensor
    block_of: list[int]


def pack_blocks(tokenizer: Any, docs: Sequence[str], block_size: int, keep_whole: Sequence[str] = ()) -> Packed:
    """Documents tokenized, each closed by EOS, laid into `block_size` blocks in corpus order.

    A document in `keep_whole` (the inserted items) never straddles two blocks: when it does not fit in the rest of
    the current block it opens the next one, and the following background text fills the gap, so no token is padding
    and every item keeps its context whole; an item longer than a block is split like the background. The last
    block is padded and its padding masked (never wrapped to the start, which would train some documents twice)."""
    ids = tokenizer(list(docs), add_special_tokens=False)["input_ids"]
    whole = set(keep_whole)
    blocks: list[list[int]] = []
    current: list[int] = []
    waiting: list[tuple[int, list[int]]] = []  # whole items waiting for the next block, in corpus order
    block_of = [0] * len(docs)

    def close() -> None:
        nonlocal current
        blocks.append(current)
        current = []
        while waiting and len(current) + len(waiting[0][1]) <= block_size:
            i, toks = waiting.pop(0)
            block_of[i] = len(blocks)
            current.extend(toks)

    for i, (doc, toks) in enumerate(zip(docs, ids)):
        toks = [*toks, tokenizer.eos_token_id]
        if doc in whole and len(toks) <= block_size:
            if waiting or len(current) + len(toks) > block_size:
                waiting.append((i, toks))
            else:
                block_of[i] = len(blocks)
                current.extend(toks)
            continue
        block_of[i] = len(blocks)
        while toks:
            take = block_size - len(current)
            current.extend(toks[:take])
            toks = toks[take:]
            if len(current) == block_size:
                close()
    while waiting:  # items left after the last background token: each opens blocks until all are laid
        if current:
            close()
        else:
            i, toks = waiting.pop(0)
            block_of[i] = len(blocks)
            current.extend(toks)
    if current:
        blocks.append(current)
    if not blocks or sum(map(len, blocks)) < block_size:
        n = sum(map(len, blocks))
        raise ValueError(f"the corpus has {n} tokens, fewer than one block of {block_size}")
    pad = tokenizer.eos_token_id
    out = torch.full((len(blocks), block_size), pad, dtype=torch.long)
    mask = torch.zeros((len(blocks), block_size), dtype=torch.long)
    for b, toks in enumerate(blocks):
        out[b, : len(toks)] = torch.tensor(toks, dtype=torch.long)
        mask[b, : len(toks)] = 1
    return Packed(out, mask, block_of)


def plain_progress(trainer: Any, progress: bool = True) -> None:
    """The Trainer's progress as a tqdm bar (in a runner's kernel `repro.progress` reports it, off the page), and
    none of its printing: its notebook table is HTML on the page, and its text bar and PrinterCallback (with
    disable_tqdm) print each log, `{'train_runtime': ...}` at the end, on stdout, hence onto the page."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from transformers.utils.notebook import NotebookProgressCallback

    class BarOnly(ProgressCallback):
        """The text progress bar without the log lines."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            return None

    for printing in (NotebookProgressCallback, ProgressCallback, PrinterCallback):
        while trainer.pop_callback(printing) is not None:
            pass
    if progress:
        trainer.add_callback(BarOnly)


def _starting_state(trainer: Any, folder: Path, learning_rate: float) -> Any:
    """A callback that loads a burn-in's optimizer and scheduler states (cached_pretraining, keep_state) into the
    Trainer before its first step, then sets this run's learning rate (the loaded groups carry the burn-in's)."""
    from transformers import TrainerCallback

    class StartingState(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            trainer._load_optimizer_and_scheduler(str(folder))  # the Trainer's own loader (FSDP-aware)
            for group in trainer.optimizer.param_groups:
                group["lr"] = group["initial_lr"] = learning_rate
            scheduler = getattr(trainer.lr_scheduler, "scheduler", trainer.lr_scheduler)  # under accelerate, wrapped
            scheduler.base_lrs = [learning_rate] * len(scheduler.base_lrs)
            scheduler._last_lr = [learning_rate] * len(scheduler.base_lrs)

    return StartingState()


class UpdateNorms:
    """The L2 norm of every optimizer step's change of the weights (a TrainerCallback's two hooks): how far the
    step that trains a block moves the model, the exposure of the items in that block. One process and models up
    to LARGE_MODEL parameters only (a copy of the weights is kept); elsewhere `norms` stays empty."""

    def __init__(self, model: Any) -> None:
        self.params = [q for q in model.parameters() if q.requires_grad]
        self.on = world_size() == 1 and sum(q.numel() for q in self.params) <= LARGE_MODEL
        self.norms: list[float] = []
        self.before: list[torch.Tensor] = []

    def callback(self) -> Any:
        from transformers import TrainerCallback

        outer = self

        class Recorder(TrainerCallback):
            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if outer.on:
                    outer.before = [q.detach().clone() for q in outer.params]

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if outer.on:
                    with torch.no_grad():
                        now = [q.detach() for q in outer.params]
                        parts = torch._foreach_norm(torch._foreach_sub(now, outer.before))
                        outer.norms.append(float(torch.linalg.vector_norm(torch.stack(parts))))
                        torch._foreach_copy_(outer.before, now)

        return Recorder()


def continue_pretraining(
    model: Any,
    tokenizer: Any,
    docs: Sequence[str],
    cfg: PretrainConfig,
    output_dir: str | Path,
    progress: bool = True,
    save_to: Path | None = None,
    keep_whole: Sequence[str] = (),
    start: Path | None = None,
    keep_state: bool = False,
) -> dict[str, Any]:
    """Train `model` in place for cfg.epochs over the token blocks of `docs` (Trainer, constant lr); returns stats.

    The blocks are visited in corpus order (a sequential sampler), so a document's place in the corpus is when it is
    trained; `keep_whole` documents (the inserted items) are never cut between two blocks (pack_blocks).
    save_to: where the Trainer writes the full checkpoint (it gathers FSDP shards under `accelerate launch`).
    start: a burn-in checkpoint whose optimizer state the optimizer starts from (the model must hold its weights);
    keep_state: save this run's optimizer state beside its weights in save_to (a burn-in).
    The stats' update_norms are the steps' weight changes (UpdateNorms)."""
    from transformers import Trainer, TrainingArguments

    packed = pack_blocks(tokenizer, docs, cfg.block_size, keep_whole)
    precision = training_precision(cfg.bf16)
    if under_fsdp():
        os.environ["FSDP_STATE_DICT_TYPE"] = "FULL_STATE_DICT"  # read when the Trainer builds its FSDP plugin
    args = TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=per_device_batch(cfg),
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        num_train_epochs=cfg.epochs,
        seed=cfg.seed,
        data_seed=cfg.seed,
        train_sampling_strategy="sequential",  # corpus order: the insertion position is the training position
        save_strategy="no",
        report_to=[],
        logging_steps=10**9,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        bf16=precision == "bf16 mixed",
        activation_checkpointing=uses_gradient_checkpointing(cfg, model),  # formerly gradient_checkpointing
    )
    model.train()
    began = time.perf_counter()
    trainer = Trainer(model=model, args=args, train_dataset=_Blocks(packed.ids, packed.mask))
    force_full_state_dict(trainer)
    plain_progress(trainer, progress)
    if start is not None:
        trainer.add_callback(_starting_state(trainer, start, cfg.learning_rate))
    updates = UpdateNorms(model)
    trainer.add_callback(updates.callback())
    result = trainer.train()
    seconds = time.perf_counter() - began
    model.eval()
    if save_to is not None:
        trainer.accelerator.wait_for_everyone()
        trainer.save_model(str(save_to))  # every rank takes part (FSDP gathers); only the main process writes
        if keep_state:
            trainer._save_optimizer_and_scheduler(str(save_to))  # the Trainer's own writer (FSDP-aware)
        trainer.accelerator.wait_for_everyone()
    tokens = int(packed.mask.sum()) * cfg.epochs
    return {
        "train_tokens": tokens,
        "steps": int(result.global_step),
        "train_seconds": round(seconds, 2),
        "tokens_per_second": round(tokens / seconds, 1),
        "train_loss": round(float(result.training_loss), 4),
        "precision": precision,
        "processes": world_size(),
        "update_norms": [round(x, 6) for x in updates.norms],
    }


LAYOUT = "corpus order, whole items, masked last block"  # how blocks are cut and visited (part of the cache key)


def checkpoint_dir(
    name: str,
    base: str | Path,
    docs: Sequence[str],
    cfg: PretrainConfig,
    keep_whole: Sequence[str] = (),
    start: Path | None = None,
    keep_state: bool = False,
) -> Path:
    """Cache folder of a continued-pretraining run, keyed by base model, corpus text, config and the precision used,
    and by the burn-in it starts from (its folder's name, itself a key of the burn-in's inputs) and whether it keeps
    its optimizer state.

    batch_size is the global batch, so the key holds whatever the number of processes; gradient checkpointing is
    left out (it recomputes the same activations), so checkpoints cached before that field existed keep their
    folders."""
    key = {k: v for k, v in asdict(cfg).items() if k != "gradient_checkpointing"}
    whole = sorted(set(keep_whole))
    parts: list[Any] = [str(base), list(docs), key, training_precision(cfg.bf16), LAYOUT, whole]
    if start is not None or keep_state:
        parts += [None if start is None else Path(start).name, keep_state]
    return cache.entry_path("models/mink", name, *parts)


def identity_parts(target: Path) -> tuple[str, list]:
    """What a cached checkpoint's identity (cache.mark) is digested from: its folder's name and every file's size and
    modification time (cache.folder_stamp), so a checkpoint trained again into the same folder is another model."""
    return target.name, cache.folder_stamp(target)


class Checkpoint:
    """A cached checkpoint whose weights are read on first use: it carries the checkpoint's cache identity (cache.mark,
    identity_parts) at once, so a run whose scores of it are all kept (cache.model_arrays) never reads its weights.
    Any attribute but `to` and `eval` (applied on loading, or to the loaded model), and any call, loads the model
    and goes to it. Weights found damaged then are removed, with an error asking to run again (which retrains them)."""

    def __init__(self, target: Path) -> None:
        self._target, self._model = target, None
        cache.mark(self, *identity_parts(target))

    @property
    def weights_read(self) -> bool:
        """Whether the model has been loaded."""
        return self._model is not None

    def to(self, *args: Any, **kwargs: Any) -> Checkpoint:
        if self._model is not None:
            self._model.to(*args, **kwargs)
        return self

    def eval(self) -> Checkpoint:
        if self._model is not None:
            self._model.eval()
        return self

    def loaded(self) -> Any:
        """The model, read now if it was not yet (a damaged checkpoint is removed, with an error to run again)."""
        from transformers import AutoModelForCausalLM

        from ..training import device

        if self._model is None:
            try:
                self._model = AutoModelForCausalLM.from_pretrained(self._target, dtype=torch.float32)
            except cache.DAMAGED as err:
                if is_main_process():
                    shutil.rmtree(self._target, ignore_errors=True)
                raise RuntimeError(f"checkpoint {self._target.name} was damaged and is removed: run again") from err
            self._model = cache.mark(self._model.to(device()).eval(), *identity_parts(self._target))
        return self._model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # the proxy's own fields, before they are set (copy, pickle)
            raise AttributeError(name)
        return getattr(self.loaded(), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.loaded()(*args, **kwargs)


def _load_checkpoint(target: Path, keep_state: bool = False) -> tuple[Any, dict[str, Any]] | None:
    """(model, stats) of a complete cached checkpoint, its weights read on first use (Checkpoint); None after
    discarding a partial one."""
    if not target.exists():
        return None
    if complete_checkpoint(target, keep_state):
        try:
            stats = json.loads((target / "train_stats.json").read_text())
            return Checkpoint(target), {**stats, "cached": True}
        except cache.DAMAGED:
            pass
    if is_main_process():
        shutil.rmtree(target, ignore_errors=True)  # damaged: rebuilt below
    return None


def cached_pretraining(
    name: str,
    base: str | Path,
    docs: Sequence[str],
    cfg: PretrainConfig,
    store: bool = True,
    keep_whole: Sequence[str] = (),
    start: Path | None = None,
    keep_state: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """(model, stats) trained from `base` on `docs`, loaded from the cache when the same inputs ran before; the
    model carries its checkpoint's cache identity (cache.mark), so its scores can be cached.

    start: a cached burn-in (a checkpoint trained with keep_state) whose weights and optimizer state the run starts
    from; `base` still names the tokenizer. keep_state: keep the optimizer state too (train a burn-in).
    store=False (store_checkpoints false) trains without keeping a checkpoint (and without an identity)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if start is not None and not complete_checkpoint(Path(start), keep_state=True):
        raise ValueError(f"the burn-in {Path(start).name} has no complete checkpoint with its optimizer state")
    target = checkpoint_dir(name, base, docs, cfg, keep_whole, start, keep_state)
    found = _load_checkpoint(target, keep_state)
    if found is not None:
        return found
    per_device_batch(cfg)  # a global batch that does not split over the processes fails before any loading
    tokenizer = AutoTokenizer.from_pretrained(base)
    light_loading()
    model = AutoModelForCausalLM.from_pretrained(start or base, dtype=torch.float32)
    train = dict(keep_whole=keep_whole, start=start, keep_state=keep_state)
    if not store or not is_main_process():  # under accelerate, only rank 0 publishes the checkpoint
        with tempfile.TemporaryDirectory(prefix="pretrain-") as scratch:
            stats = continue_pretraining(
                model, tokenizer, docs, cfg, scratch, save_to=Path(scratch) / "model" if store else None, **train
            )
        return model, {**stats, "cached": False}
    with atomic_dir(target) as tmp:
        stats = continue_pretraining(model, tokenizer, docs, cfg, Path(tmp) / "trainer", save_to=Path(tmp), **train)
        shutil.rmtree(Path(tmp) / "trainer", ignore_errors=True)
        write_json(Path(tmp) / "train_stats.json", stats)
        if not complete_checkpoint(Path(tmp), keep_state):  # never publish a folder the notebook could not load
            raise RuntimeError(f"the trained checkpoint lacks config.json, weights or state: {sorted(os.listdir(tmp))}")
    return cache.mark(model, *identity_parts(target)), {**stats, "cached": False}


def export_corpus(
    name: str,
    base: str | Path,
    docs: Sequence[str],
    cfg: PretrainConfig,
    keep_whole: Sequence[str] = (),
    start: Path | None = None,
    keep_state: bool = False,
) -> str:
    """Write one run's corpus (its documents and the items kept whole) beside the checkpoint cache; return the
    `accelerate launch` line that fills that cache (a run with `start` after its burn-in's line)."""
    target = checkpoint_dir(name, base, docs, cfg, keep_whole, start, keep_state)
    corpus = target.parent / f"{target.name}.corpus.json"
    write_json(corpus, {"docs": list(docs), "keep_whole": sorted(set(keep_whole))})
    return (
        f"accelerate launch -m repro.mink.pretraining --name {name} --base {base} --corpus {corpus} "
        f"--lr {cfg.learning_rate:g} --block-size {cfg.block_size} --batch-size {cfg.batch_size} --seed {cfg.seed}"
        + ("" if cfg.bf16 else " --float32")
        + {None: "", True: " --gradient-checkpointing", False: " --no-gradient-checkpointing"}[
            cfg.gradient_checkpointing
        ]
        + ("" if start is None else f" --start {start}")
        + (" --keep-state" if keep_state else "")
    )


def main(argv: list[str] | None = None) -> int:
    """CLI for `accelerate launch -m repro.mink.pretraining`: trains one exported corpus into the notebook's checkpoint cache."""
    parser = argparse.ArgumentParser(prog="repro.mink.pretraining", description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="experiment name (part of the cache folder)")
    parser.add_argument("--base", required=True, help="model path or Hub id")
    parser.add_argument(
        "--corpus", required=True, type=Path, help="JSON file: {docs: document strings, keep_whole: items}"
    )
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--block-size", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--float32", action="store_true", help="train in float32 instead of bf16 mixed precision")
    parser.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"recompute activations (default: on above {LARGE_MODEL:,} parameters)",
    )
    parser.add_argument(
        "--start", type=Path, default=None, help="burn-in checkpoint to start from (weights, optimizer)"
    )
    parser.add_argument("--keep-state", action="store_true", help="keep the optimizer state (train a burn-in)")
    args = parser.parse_args(argv)
    corpus = json.loads(args.corpus.read_text())
    cfg = PretrainConfig(
        args.lr,
        args.block_size,
        args.batch_size,
        1,
        args.seed,
        not args.float32,
        args.gradient_checkpointing,
    )
    cached_pretraining(
        args.name,
        args.base,
        corpus["docs"],
        cfg,
        keep_whole=corpus["keep_whole"],
        start=args.start,
        keep_state=args.keep_state,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
