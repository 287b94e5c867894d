"""DoReMi miniature (Xie et al., NeurIPS 2023): Group DRO domain reweighting of a tiny proxy LM against a reference.

Algorithm 1 of the paper, as the authors' code (sangmichaelxie/doremi, doremi/trainer.py) runs it, at step t:

1. per-domain excess loss: lambda_t[i] = sum over domain i's tokens in the batch of max(l_proxy - l_ref, 0),
   divided by domain i's token count in the batch; a domain absent from the batch keeps its previous lambda
   (the authors' `perdomain_scores` buffer, which starts at log |V|, the loss of a uniform guess over the vocabulary);
2. exponentiated-gradient step in log space: log alpha'_t = log alpha_{t-1} + eta * lambda_t, alpha'_t = softmax;
3. smoothing: alpha_t = (1 - c) alpha'_t + c u, with u uniform (or a prior);
4. proxy update on sum_tokens alpha_t[d(token)] l_proxy(token) / sum_tokens alpha_t[d(token)], i.e.
   sum_i alpha_i S_i / sum_i alpha_i N_i with S_i, N_i domain i's summed loss and token count in the batch.

The returned domain weights are the average of alpha_t over all steps. Every model trains as the authors' Pile
scripts (scripts/runs/run_pile_*.sh) set it: AdamW with betas (0.9, 0.99), and their `linear_warmup_exponential`
schedule: linear warmup over 6 % of the steps, then exponential decay from the peak towards a tenth of it (their
1e-3 to 1e-4), the decay rate chosen to come within 1e-10 of the end rate at the last step (their
`LinearWarmupExponentialLR`, doremi/trainer.py). That class as written zips `base_lrs` and `gammas` the other way
round, which would hold the rate at the end rate right after warmup; we follow its comment and its formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from ..training import device

BlocksPerDomain = Sequence[torch.Tensor]


def tiny_llama(
    vocab_size: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4, seq_len: int = 128, seed: int = 0
) -> Any:
    """A randomly initialised (seeded) LLaMA-architecture causal LM with tied embeddings and a ~2.7 d MLP."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=d_model,
        intermediate_size=8 * max(1, round(2.7 * d_model / 8)),
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        num_key_value_heads=n_heads,
        max_position_embeddings=seq_len,
        tie_word_embeddings=True,
        use_cache=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


def _n_tokens(domain: Any) -> int:
    """Tokens in one domain: a flat token stream, or a list of tokenized documents."""
    if isinstance(domain, (np.ndarray, torch.Tensor)) and domain.ndim == 1:
        return int(domain.shape[0])
    return sum(len(doc) for doc in domain)


def domain_token_counts(tokenized_domains: Sequence[Any]) -> np.ndarray:
    """Size of each domain in tokens (not documents)."""
    return np.array([_n_tokens(d) for d in tokenized_domains], dtype=np.int64)


class DomainBlocks:
    """Per-domain token streams cut into fixed-length blocks (the tail shorter than a block is dropped)."""

    def __init__(self, streams: Sequence[Any], block_size: int, names: Sequence[str] | None = None):
        self.block_size = block_size
        self.blocks: list[torch.Tensor] = []
        for i, stream in enumerate(streams):
            ids = torch.as_tensor(np.asarray(stream, dtype=np.int64))
            n_blocks = ids.numel() // block_size
            if n_blocks == 0:
                raise ValueError(f"domain {i} has {ids.numel()} tokens, fewer than one block of {block_size}")
            self.blocks.append(ids[: n_blocks * block_size].reshape(n_blocks, block_size))
        self.names = list(names) if names is not None else [f"domain {i}" for i in range(len(self.blocks))]
        self._all = torch.cat(self.blocks)
        self._offsets = np.concatenate([[0], np.cumsum(self.blocks_per_domain())[:-1]])

    @property
    def n_domains(self) -> int:
        """Number of domains K."""
        return len(self.blocks)

    def blocks_per_domain(self) -> np.ndarray:
        """Number of blocks in each domain."""
        return np.array([len(b) for b in self.blocks], dtype=np.int64)

    def sample_batch(
        self, weights: Sequence[float] | np.ndarray, batch_size: int, rng: np.random.Generator
    ) -> tuple[torch.Tensor, np.ndarray]:
        """A batch of blocks, each sequence's domain drawn from `weights`, its block uniformly within the domain."""
        p = np.asarray(weights, dtype=np.float64)
        domains = rng.choice(self.n_domains, size=batch_size, p=p / p.sum())
        within = rng.integers(0, self.blocks_per_domain()[domains])
        return self._all[torch.from_numpy(self._offsets[domains] + within)], domains.astype(np.int64)


def per_token_loss(model: Any, input_ids: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of every predicted position, shape (batch, seq_len - 1), from one forward pass."""
    ids = input_ids.to(next(model.parameters()).device)
    logits = model(input_ids=ids, use_cache=False).logits
    # targets shifted left with the last position ignored: no slice of the (batch, seq, vocab) logits, whose
    # backward would allocate and fill a second logits-sized tensor
    targets = torch.roll(ids, -1, dims=1)
    targets[:, -1] = -100
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), reduction="none")
    return loss.view(ids.shape)[:, :-1]


def sum_by_domain(
    token_values: torch.Tensor, domains: Sequence[int] | np.ndarray | torch.Tensor, n_domains: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-domain sum of per-token values (batch, positions) and per-domain token counts."""
    dom = domains if isinstance(domains, torch.Tensor) else torch.from_numpy(np.asarray(domains, dtype=np.int64))
    dom = dom.to(device=token_values.device, dtype=torch.long)
    sums = torch.zeros(n_domains, dtype=token_values.dtype, device=token_values.device)
    sums = sums.index_add(0, dom, token_values.sum(dim=1))
    counts = torch.bincount(dom, minlength=n_domains).to(token_values.dtype) * token_values.shape[1]
    return sums, counts


def per_domain_token_loss(
    model: Any, input_ids: torch.Tensor, domains: Sequence[int] | np.ndarray | torch.Tensor, n_domains: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of per-token losses per domain and token count per domain, from one forward pass (causal shift)."""
    return sum_by_domain(per_token_loss(model, input_ids), domains, n_domains)


def _numpy(x: Any) -> np.ndarray:
    """A float64 numpy copy of a tensor or array-like."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def excess_scores(excess_sum: Any, token_counts: Any, previous: np.ndarray | None = None) -> np.ndarray:
    """Per-domain lambda: summed clipped excess loss over the domain's tokens in the batch; a domain absent from the
    batch keeps its `previous` lambda as in the authors' code (zero when there is none)."""
    excess, counts = _numpy(excess_sum), _numpy(token_counts)
    present = counts > 0
    kept = np.zeros_like(excess) if previous is None else _numpy(previous)
    per_token_excess = np.divide(excess, counts, out=kept.copy(), where=present)
    return np.where(present, np.maximum(per_token_excess, 0.0), kept)


def exponentiated_step(
    log_alpha: np.ndarray, lam: np.ndarray, step_size: float = 1.0, smoothing: float = 1e-3, prior: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """log alpha' = log alpha + eta lambda, alpha' = softmax, then smoothing towards `prior` (uniform by default)."""
    logits = _numpy(log_alpha) + step_size * _numpy(lam)
    updated = np.exp(logits - logits.max())
    updated /= updated.sum()
    u = np.full(len(updated), 1.0 / len(updated)) if prior is None else _numpy(prior) / _numpy(prior).sum()
    alpha = (1.0 - smoothing) * updated + smoothing * u
    return alpha, np.log(alpha)


def doremi_update(
    log_alpha: np.ndarray,
    excess_sum: Any,
    token_counts: Any,
    step_size: float = 1.0,
    smoothing: float = 1e-3,
    prior: np.ndarray | None = None,
    previous: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One exponentiated-gradient step on the domain weights: returns (alpha_t, log alpha_t)."""
    return exponentiated_step(log_alpha, excess_scores(excess_sum, token_counts, previous), step_size, smoothing, prior)


def doremi_proxy_loss(loss_sum: torch.Tensor, token_counts: torch.Tensor, alpha: Any) -> torch.Tensor:
    """The proxy's reweighted loss as the authors normalize it: sum_i a_i S_i / sum_i a_i N_i."""
    a = torch.as_tensor(_numpy(alpha), dtype=loss_sum.dtype, device=loss_sum.device)
    return (a * loss_sum).sum() / (a * token_counts.to(loss_sum.dtype)).sum()


ADAM_BETAS = (0.9, 0.99)  # the authors' --adam_beta1 0.9 --adam_beta2 0.99


def _adamw(model: Any, lr: float) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters with the authors' betas (weight decay 0.01, their --weight_decay)."""
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, betas=ADAM_BETAS)


WARMUP_SHARE = 0.06  # the authors' --warmup_ratio
LR_END_SHARE = 0.1  # their --lr_end 1e-4 against --learning_rate 1e-3
LR_GAP_AT_END = 1e-10  # their decay comes within this of the end rate at the last step
LR_SCHEDULE = (  # part of every cache key
    f"linear warmup {WARMUP_SHARE:.0%}, exponential to {LR_END_SHARE:g} x peak; AdamW betas {ADAM_BETAS}"
)


def lr_factor(t: int, steps: int, lr: float = 1e-3) -> float:
    """The authors' linear_warmup_exponential multiplier of the peak rate `lr` at step t (0-based) of `steps`:
    end + (1 - end) * gamma^(t - warmup), gamma such that the rate is within 1e-10 of the end rate at the last step."""
    warmup = max(1, round(WARMUP_SHARE * steps))
    if t < warmup:
        return (t + 1) / warmup
    span = max(1, steps - warmup)
    log_gamma = math.log(LR_GAP_AT_END / (lr * (1.0 - LR_END_SHARE))) / span
    return LR_END_SHARE + (1.0 - LR_END_SHARE) * math.exp(log_gamma * (t - warmup))


def _schedule(opt: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning-rate schedule of every model here (`lr_factor` at the optimizer's peak rate)."""
    peak = opt.param_groups[0]["lr"]
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda t: lr_factor(t, steps, peak))


def _step(model: Any, opt: torch.optim.Optimizer, loss: torch.Tensor, schedule: Any = None) -> None:
    """Backprop, clip the gradient norm at 1 (the HF Trainer default the authors train with), update."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if schedule is not None:
        schedule.step()


def _bars(progress: bool) -> bool:
    """Progress bars at a terminal or reported to the runner; none in a plain notebook kernel (`progress.shown`)."""
    from .. import progress as shown_progress

    return progress and shown_progress.shown()


def train_lm(
    model: Any,
    blocks: DomainBlocks,
    weights: Sequence[float] | np.ndarray,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    progress: bool = True,
    eval_every: int | None = None,
    eval_fn: Callable[[Any], Any] | None = None,
) -> dict[str, np.ndarray]:
    """AdamW with the authors' schedule on batches drawn from a fixed domain mixture; history of losses and evals."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.to(device()).train()
    opt = _adamw(model, lr)
    schedule = _schedule(opt, steps)
    losses, eval_steps, evals = np.zeros(steps), [], []
    for t in tqdm(range(steps), desc="LM training", leave=False, disable=not _bars(progress)):
        ids, _ = blocks.sample_batch(weights, batch_size, rng)
        loss = per_token_loss(model, ids).mean()
        _step(model, opt, loss, schedule)
        losses[t] = loss.item()
        done = t + 1
        if eval_fn is not None and eval_every and (done % eval_every == 0 or done == steps):
            model.eval()
            with torch.no_grad():
                evals.append(np.asarray(eval_fn(model), dtype=np.float64))
            model.train()
            eval_steps.append(done)
    model.eval()
    return {
        "step": np.arange(1, steps + 1),
        "loss": losses,
        "eval_step": np.array(eval_steps, dtype=np.int64),
        "eval": np.array(evals),
    }


def train_proxy_doremi(
    proxy: Any,
    reference: Any,
    blocks: DomainBlocks,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    step_size: float = 1.0,
    smoothing: float = 1e-3,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Group DRO proxy training on uniformly sampled batches (the authors' proxy config, `pile_uniform.json`);
    returns (average alpha, alpha per step (steps, K))."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    k = blocks.n_domains
    uniform = np.full(k, 1.0 / k)
    # the authors start every domain's score at log |V| (a domain absent from the first batches keeps it)
    log_alpha, scores = np.log(uniform), np.full(k, math.log(proxy.config.vocab_size))
    proxy.to(device()).train()
    reference.to(device()).eval()
    opt = _adamw(proxy, lr)
    schedule = _schedule(opt, steps)
    history = np.zeros((steps, k))
    for t in tqdm(range(steps), desc="DoReMi proxy", leave=False, disable=not _bars(progress)):
        ids, domains = blocks.sample_batch(uniform, batch_size, rng)
        with torch.no_grad():
            ref_tokens = per_token_loss(reference, ids)
        proxy_tokens = per_token_loss(proxy, ids)
        clipped_excess = (proxy_tokens.detach() - ref_tokens).clamp_min(0.0)
        excess_sum, counts = sum_by_domain(clipped_excess, domains, k)
        scores = excess_scores(excess_sum, counts, scores)
        alpha, log_alpha = exponentiated_step(log_alpha, scores, step_size, smoothing)
        history[t] = alpha
        loss_sum, counts = sum_by_domain(proxy_tokens, domains, k)
        _step(proxy, opt, doremi_proxy_loss(loss_sum, counts, alpha), schedule)
    proxy.eval()
    return history.mean(axis=0), history


def block_nll(model: Any, blocks_per_domain: BlocksPerDomain | DomainBlocks, batch_size: int) -> list[np.ndarray]:
    """Summed next-token NLL of every block, per domain (each block scores block_size - 1 tokens)."""
    per_domain = blocks_per_domain.blocks if isinstance(blocks_per_domain, DomainBlocks) else blocks_per_domain
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for blocks in per_domain:
            sums = [
                per_token_loss(model, blocks[i : i + batch_size]).sum(dim=1) for i in range(0, len(blocks), batch_size)
            ]
            out.append(torch.cat(sums).double().cpu().numpy())
    model.train(was_training)
    return out


def per_domain_nll(
    model: Any, blocks_per_domain: BlocksPerDomain | DomainBlocks, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-domain summed next-token NLL and scored-token count on held-out blocks."""
    per_block = block_nll(model, blocks_per_domain, batch_size)
    per_domain = blocks_per_domain.blocks if isinstance(blocks_per_domain, DomainBlocks) else blocks_per_domain
    counts = np.array([len(b) * (b.shape[1] - 1) for b in per_domain], dtype=np.int64)
    return np.array([s.sum() for s in per_block]), counts


def per_domain_perplexity(model: Any, blocks_per_domain: BlocksPerDomain | DomainBlocks, batch_size: int) -> np.ndarray:
    """exp(mean per-token NLL) on each domain's held-out blocks."""
    nll, counts = per_domain_nll(model, blocks_per_domain, batch_size)
    return np.exp(nll / counts)


def steps_to_reach(history_steps: Sequence[float], history_values: Sequence[float], target: float) -> float:
    """First step at which the value is <= target, interpolated linearly between evals; NaN if never reached."""
    steps = np.asarray(history_steps, dtype=np.float64)
    values = np.asarray(history_values, dtype=np.float64)
    hits = np.flatnonzero(values <= target)
    if hits.size == 0:
        return math.nan
    k = int(hits[0])
    if k == 0 or not np.isfinite(values[k - 1]):
        return float(steps[k])
    frac = (values[k - 1] - target) / (values[k - 1] - values[k])
    return float(steps[k - 1] + frac * (steps[k] - steps[k - 1]))
