"""Sentence language models (a 1-layer LSTM, a GPT-2) and their model-agnostic trainers: non-private, S-DP, DPSGD, CRT.

Every model maps ids (B, T) to (logits (B, T, V), state). DP-SGD runs through Opacus (per-sample clipping,
Gaussian noise, RDP accountant): DPLSTM for the LSTM, a registered per-sample gradient for GPT-2's Conv1D."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"


@dataclass
class Vocab:
    """Token <-> id, with <pad> = 0."""

    itos: list[str]

    def __post_init__(self) -> None:
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists: Sequence[Sequence[str]], extra: Sequence[str] = ()) -> "Vocab":
        """Every token seen, in frequency order, after the specials and `extra`."""
        counts = Counter(t for toks in token_lists for t in toks)
        specials = [PAD, UNK, BOS, EOS, *extra]
        return cls(specials + [t for t, _ in counts.most_common() if t not in specials])

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """<s> tokens </s> as ids, unknown tokens as <unk>."""
        unk = self.stoi[UNK]
        return [self.stoi[BOS], *(self.stoi.get(t, unk) for t in tokens), self.stoi[EOS]]

    def encode_marked(self, tokens: Sequence[str], flags: Sequence[bool]) -> tuple[list[int], np.ndarray]:
        """encode(tokens) and, aligned with it, 1.0 at the ids of flagged tokens (0 at <s>, </s>)."""
        return self.encode(tokens), np.r_[0, np.asarray(flags, dtype=np.float32), 0].astype(np.float32)

    def token_id(self, token: str) -> int:
        """The id of one known token."""
        return self.stoi[token]


class LSTMLM(nn.Module):
    """Embedding -> 1-layer LSTM -> linear; `private=True` uses Opacus' DPLSTM (per-sample gradients)."""

    def __init__(self, vocab_size: int, emb: int = 200, hidden: int = 200, private: bool = False):
        super().__init__()
        from opacus.layers import DPLSTM

        self.emb = nn.Embedding(vocab_size, emb)
        self.lstm = (DPLSTM if private else nn.LSTM)(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None):
        """Logits (B, T, V) and the final (h, c)."""
        y, state = self.lstm(self.emb(x), state)
        return self.out(y), state


def pad(seqs: Sequence[Sequence[int]]) -> torch.Tensor:
    """Right-pad id lists with 0 into a (B, T) tensor."""
    out = torch.zeros(len(seqs), max(len(s) for s in seqs), dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s)
    return out


def token_nll(model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Per-token negative log-likelihood (B, T-1) of batch[:, 1:] given its prefix; 0 at padding."""
    logits, _ = model(batch[:, :-1])
    nll = nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")
    return nll * (batch[:, 1:] != 0)


def sample_loss(model: nn.Module, batch: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over samples of each sample's mean NLL over its weighted target tokens (Opacus' 'mean' reduction)."""
    nll = token_nll(model, batch)
    w = (batch[:, 1:] != 0).float() if weights is None else weights[:, 1:] * (batch[:, 1:] != 0)
    return ((nll * w).sum(1) / w.sum(1).clamp(min=1)).mean()


@torch.no_grad()
def sentence_nll(model: nn.Module, seqs: Sequence[Sequence[int]], batch_size: int = 512) -> np.ndarray:
    """Mean token NLL of each sequence (log-perplexity)."""
    model.eval()
    out = []
    for i in range(0, len(seqs), batch_size):
        b = pad(seqs[i : i + batch_size])
        nll = token_nll(model, b)
        out.append((nll.sum(1) / (b[:, 1:] != 0).sum(1)).numpy())
    return np.concatenate(out)


@torch.no_grad()
def suffix_logprob(model: nn.Module, seqs: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """Log-probability of the last `n` tokens of each (equal-length) sequence given the rest: naive scoring."""
    model.eval()
    b = torch.as_tensor([list(s) for s in seqs])
    return (-token_nll(model, b)[:, -n:].double().sum(1)).numpy()


@torch.no_grad()
def perplexity(model: nn.Module, seqs: Sequence[Sequence[int]], batch_size: int = 512) -> float:
    """Corpus perplexity: exp of the token-weighted mean NLL."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(seqs), batch_size):
        b = pad(seqs[i : i + batch_size])
        total += float(token_nll(model, b).sum())
        count += int((b[:, 1:] != 0).sum())
    return math.exp(total / count)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and privacy settings shared by the trainers."""

    epochs: int = 10
    lr: float = 20.0
    batch: int = 64
    dp_lr: float = 1.0
    dp_batch: int = 64
    clip: float = 0.25  # global-norm clip of non-private steps
    max_grad_norm: float = 0.1  # per-sample clip of DP steps
    target_epsilon: float = 3.0
    delta: float = 8e-5
    seed: int = 0
    optimizer: str = "sgd"  # "sgd" or "adam", for public and DP steps alike


def _optimizer(model: nn.Module, lr: float, cfg: TrainConfig) -> torch.optim.Optimizer:
    """SGD or Adam over the model's parameters, as `cfg.optimizer` says."""
    kind = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[cfg.optimizer]
    return kind(model.parameters(), lr=lr)


def _batches(n: int, size: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Shuffled index batches covering range(n) once."""
    return list(torch.randperm(n, generator=gen).split(size)) if n else []


def _sgd_step(model: nn.Module, opt: torch.optim.Optimizer, loss: torch.Tensor, clip: float) -> None:
    """One non-private step with global-norm clipping."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()


def train_nonprivate(model: nn.Module, data: Sequence[Sequence[int]], cfg: TrainConfig, desc: str = "non-private") -> nn.Module:
    """Plain (non-private) training over all sentences (optionally already redacted by π)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = _optimizer(model, cfg.lr, cfg)
    model.train()
    for _ in tqdm(range(cfg.epochs), desc=desc, leave=False):
        for idx in _batches(len(data), cfg.batch, gen):
            _sgd_step(model, opt, sample_loss(model, pad([data[i] for i in idx])), cfg.clip)
    return model


class _Private:
    """An Opacus DP-SGD engine over `n` data points: Poisson-sampled index batches, noise calibrated to ε."""

    def __init__(self, model: nn.Module, n: int, cfg: TrainConfig, epochs: int):
        from opacus import PrivacyEngine

        self.engine = PrivacyEngine(accountant="rdp")
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(n)), batch_size=min(cfg.dp_batch, n))
        self.module, self.opt, self.loader = self.engine.make_private_with_epsilon(
            module=model, optimizer=_optimizer(model, cfg.dp_lr, cfg), data_loader=loader,
            target_epsilon=cfg.target_epsilon, target_delta=cfg.delta, epochs=epochs,
            max_grad_norm=cfg.max_grad_norm, poisson_sampling=True)
        self.pub_opt = _optimizer(model, cfg.lr, cfg)
        self.cfg = cfg

    def dp_step(self, batch: torch.Tensor, weights: torch.Tensor | None = None) -> None:
        """One DP-SGD step: per-sample clipped gradients plus Gaussian noise."""
        self.module.enable_hooks()
        self.opt.zero_grad(set_to_none=True)
        sample_loss(self.module, batch, weights).backward()
        self.opt.step()

    def public_step(self, batch: torch.Tensor, weights: torch.Tensor | None = None) -> None:
        """One ordinary step (no per-sample hooks, no noise) on public data."""
        self.module.disable_hooks()
        _sgd_step(self.module, self.pub_opt, sample_loss(self.module, batch, weights), self.cfg.clip)
        self.module.enable_hooks()

    def finish(self) -> None:
        """Remove Opacus' per-sample hooks so the trained model runs as a plain module."""
        self.module._close()

    def epsilon(self, delta: float) -> float:
        """ε spent so far at δ (Opacus RDP accountant)."""
        return float(self.engine.accountant.get_epsilon(delta))


def _dp_batches(private: _Private):
    """Index batches from the Poisson-sampled loader, skipping empty draws."""
    for (idx,) in private.loader:
        if len(idx):
            yield idx


def train_dpsgd(model: nn.Module, data: Sequence[Sequence[int]], cfg: TrainConfig) -> tuple[nn.Module, float]:
    """DP-SGD on every sentence; returns the model and ε at δ."""
    engine = _Private(model, len(data), cfg, cfg.epochs)
    engine.module.train()
    for _ in tqdm(range(cfg.epochs), desc="DPSGD", leave=False):
        for idx in _dp_batches(engine):
            engine.dp_step(pad([data[i] for i in idx]))
    engine.finish()
    return model, engine.epsilon(cfg.delta)


def train_sdp(model: nn.Module, data: Sequence[Sequence[int]], marks: Sequence[np.ndarray], redacted: Sequence[Sequence[int]],
              redacted_marks: Sequence[np.ndarray], cfg: TrainConfig) -> tuple[nn.Module, float]:
    """Selective DP-SGD (Shi et al.): per batch, a non-private step on the π-redacted sentences (loss on their
    unmarked ids), then a DP-SGD step on the raw sentences whose loss covers only the ids π flags (`marks`)."""
    engine = _Private(model, len(data), cfg, cfg.epochs)
    engine.module.train()
    for _ in tqdm(range(cfg.epochs), desc="S-DP", leave=False):
        for idx in _dp_batches(engine):
            engine.public_step(pad([redacted[i] for i in idx]), 1.0 - pad_float([redacted_marks[i] for i in idx]))
            engine.dp_step(pad([data[i] for i in idx]), pad_float([marks[i] for i in idx]))
    engine.finish()
    return model, engine.epsilon(cfg.delta)


def pad_float(rows: Sequence[np.ndarray]) -> torch.Tensor:
    """Right-pad float rows with 0 into a (B, T) tensor."""
    out = torch.zeros(len(rows), max(len(r) for r in rows))
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(r)
    return out


def train_crt(model: nn.Module, public: Sequence[Sequence[int]], private: Sequence[Sequence[int]], cfg: TrainConfig,
              gamma: float) -> tuple[nn.Module, float, float]:
    """CRT: each epoch, one SGD epoch on D_pub, then one DP-SGD epoch on D_pri; batches never mix the two.
    Returns the model, ε_dp at δ and the confidentiality ε at δ/γ amplified by γ."""
    from .privacy import confidentiality_epsilon

    engine = _Private(model, len(private), cfg, cfg.epochs)
    gen = torch.Generator().manual_seed(cfg.seed)
    engine.module.train()
    for _ in tqdm(range(cfg.epochs), desc="CRT", leave=False):
        for idx in _batches(len(public), cfg.batch, gen):
            engine.public_step(pad([public[i] for i in idx]))
        for idx in _dp_batches(engine):
            engine.dp_step(pad([private[i] for i in idx]))
    engine.finish()
    eps_conf = float(confidentiality_epsilon(engine.epsilon(cfg.delta / gamma), gamma)) if gamma > 0 else 0.0
    return model, engine.epsilon(cfg.delta), eps_conf


class LSTMStepper:
    """Feeds an LSTMLM one token at a time from cached (h, c) states, for prefix-tree enumeration."""

    def __init__(self, model: LSTMLM):
        self.model = model.eval()

    @torch.no_grad()
    def start(self, context: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Next-token log-probs after `context` (1, V) and the state (1, 2H)."""
        logits, (h, c) = self.model(torch.as_tensor([list(context)]))
        return logits[:, -1].log_softmax(-1), torch.cat([h[-1], c[-1]], 1)

    @torch.no_grad()
    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Feed `tokens` (B,) from states (B, 2H): next-token log-probs (B, V) and new states."""
        h, c = state.chunk(2, dim=1)
        logits, (h, c) = self.model(tokens[:, None], (h[None].contiguous(), c[None].contiguous()))
        return logits[:, -1].log_softmax(-1), torch.cat([h[-1], c[-1]], 1)
