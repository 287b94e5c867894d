"""The five model-agnostic trainers of the CRT chapter: non-private, non-private + mask, S-DP, DPSGD, CRT.

Every model maps ids (B, T) to (logits (B, T, V), state). DP-SGD runs through Opacus (per-sample clipping,
Gaussian noise, RDP accountant): DPLSTM for the LSTM, a registered per-sample gradient for GPT-2's Conv1D."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .. import cache
from .language_model import pad, sample_loss


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
    noise: bool = True  # DP steps with Gaussian noise calibrated to ε; False: per-sample clipping alone (no privacy)


EpochHook = Callable[[int, nn.Module, float | None], None]  # (epoch from 1, model, ε spent so far or None)


def _report(hook: EpochHook | None, epoch: int, model: nn.Module, epsilon: float | None) -> None:
    """Call the per-epoch hook, if any, with the model in eval mode, then put it back in training mode."""
    if hook is not None:
        hook(epoch + 1, model.eval(), epsilon)
        model.train()


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


def train_nonprivate(
    model: nn.Module,
    data: Sequence[Sequence[int]],
    cfg: TrainConfig,
    desc: str = "non-private",
    on_epoch: EpochHook | None = None,
) -> nn.Module:
    """Plain (non-private) training over all sentences (optionally already redacted by π)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = _optimizer(model, cfg.lr, cfg)
    model.train()
    for epoch in tqdm(range(cfg.epochs), desc=desc, leave=False):
        for idx in _batches(len(data), cfg.batch, gen):
            _sgd_step(model, opt, sample_loss(model, pad([data[i] for i in idx])), cfg.clip)
        _report(on_epoch, epoch, model, None)
    return model


class _Private:
    """An Opacus DP-SGD engine over `n` data points: Poisson-sampled index batches, noise calibrated to ε."""

    def __init__(self, model: nn.Module, n: int, cfg: TrainConfig, epochs: int):
        from opacus import PrivacyEngine

        self.engine = PrivacyEngine(accountant="rdp")
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.arange(n)), batch_size=min(cfg.dp_batch, n)
        )
        # make_private_with_epsilon's own steps, with the calibrated σ computed once per process for each input
        self.module, self.opt, self.loader = self.engine.make_private(
            module=model,
            optimizer=_optimizer(model, cfg.dp_lr, cfg),
            data_loader=loader,
            noise_multiplier=noise_multiplier(cfg.target_epsilon, cfg.delta, 1 / len(loader), epochs)
            if cfg.noise
            else 0.0,
            max_grad_norm=cfg.max_grad_norm,
            poisson_sampling=True,
        )
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
        """Remove Opacus' per-sample hooks and `grad_sample` attributes so the trained model runs as a plain module
        (GradSampleModule.to_standard_module; it hands back the very model that was wrapped)."""
        self.module.to_standard_module()

    def epsilon(self, delta: float) -> float:
        """ε spent so far at δ (Opacus RDP accountant); infinite for clipped steps without noise."""
        return rdp_epsilon(self.engine.accountant.history, delta) if self.cfg.noise else math.inf


# Opacus' RDP accounting evaluates fractional-order RDP bounds in Python loops: one calibration of σ took about 2 s, and
# the per-epoch ε reports as long again, about half of the CRT chapter's smoke training. The same numbers come from two
# caches: σ by its inputs on disk (every run and exercise calibrates the same few), and one step's RDP curve by (q, σ)
# in memory (ε after n steps is n times it, Opacus' own formula). A calibration from an empty cache is Opacus'
# bisection with the fractional orders' series summed as arrays (`_sgm_rdp`): 0.18-0.24 s against 0.84-1.96 s through
# Opacus' loops, whose slowest series are those near σ = 1 at sampling rates near 1/2 (CRT's smoke run: 97 s -> 88 s).
@functools.cache
def noise_multiplier(target_epsilon: float, delta: float, sample_rate: float, epochs: int) -> float:
    """σ that Opacus' make_private_with_epsilon calibrates for (ε, δ) after `epochs` at `sample_rate` (RDP)."""
    import opacus

    inputs = {"epsilon": target_epsilon, "delta": delta, "sample_rate": sample_rate, "epochs": epochs}
    path = cache.entry_path("crt", "sigma", inputs, opacus.__version__, suffix=".json")

    def calibrate(tmp: Path) -> None:
        sigma = calibrated_sigma(target_epsilon, delta, sample_rate, epochs)
        tmp.write_text(json.dumps({**inputs, "sigma": sigma}))

    return float(cache.file_entry(path, calibrate, cache.read_json)[0]["sigma"])


def calibrated_sigma(target_epsilon: float, delta: float, sample_rate: float, epochs: int) -> float:
    """Opacus' get_noise_multiplier(accountant="rdp", epsilon_tolerance=0.01), step for step: σ doubled from 20 until
    ε ≤ target, then bisected; ε of each σ from `_sgm_rdp` and Opacus' RDP-to-(ε, δ) conversion."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp
    from opacus.accountants.utils import MAX_SIGMA

    steps = int(epochs / sample_rate)

    def epsilon(sigma: float) -> float:
        curve = _sgm_rdp(sample_rate, sigma, RDPAccountant.DEFAULT_ALPHAS) * steps
        return float(rdp.get_privacy_spent(orders=RDPAccountant.DEFAULT_ALPHAS, rdp=curve, delta=delta)[0])

    eps_high, sigma_low, sigma_high = float("inf"), 0.0, 10.0
    while eps_high > target_epsilon:
        sigma_high = 2 * sigma_high
        eps_high = epsilon(sigma_high)
        if sigma_high > MAX_SIGMA:
            raise ValueError("The privacy budget is too low.")
    while target_epsilon - eps_high > 0.01:
        sigma = (sigma_low + sigma_high) / 2
        eps = epsilon(sigma)
        if eps < target_epsilon:
            sigma_high, eps_high = sigma, eps
        else:
            sigma_low = sigma
    return sigma_high


def _sgm_rdp(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian step at `orders`: Opacus' `_compute_rdp`, its fractional-order series
    (Mironov, Talwar & Zhang 2019, §3.3) summed as arrays over the orders and terms, each order's series cut after
    the first term below e^-30 as Opacus' loop does; integer orders and the edge cases (q ∈ {0, 1}, σ = 0) by
    Opacus itself."""
    from opacus.accountants.analysis import rdp
    from scipy import special

    orders = np.asarray(orders, dtype=float)
    out = np.empty(len(orders))
    frac = (orders != np.round(orders)) & (q not in (0.0, 1.0)) & (sigma != 0)
    for k in np.flatnonzero(~frac):
        out[k] = rdp._compute_rdp(q, sigma, float(orders[k]))
    if not frac.any():
        return out
    alphas = orders[frac]
    z0 = sigma**2 * np.log(1 / q - 1) + 0.5
    terms: list[list[np.ndarray]] = [[] for _ in alphas]  # per order: its series' terms, chunk by chunk
    active, start, chunk = np.arange(len(alphas)), 0, 256
    while active.size:  # the next `chunk` terms of every order whose series has not reached a small term yet
        alpha, i = alphas[active][:, None], np.arange(start, start + chunk, dtype=float)[None, :]
        coef = special.binom(alpha, i)
        log_coef, j = np.log(np.abs(coef)), alpha - i
        log_e0 = special.log_ndtr((z0 - i) / sigma)  # log(erfc((i - z0) / (√2 σ)) / 2)
        log_e1 = special.log_ndtr((j - z0) / sigma)
        log_s0 = log_coef + i * np.log(q) + j * np.log(1 - q) + (i * i - i) / (2 * sigma**2) + log_e0
        log_s1 = log_coef + j * np.log(q) + i * np.log(1 - q) + (j * j - j) / (2 * sigma**2) + log_e1
        small = np.maximum(log_s0, log_s1) < -30
        done = small.any(axis=1)
        stop = np.where(done, small.argmax(axis=1) + 1, chunk)  # up to and with the first small term
        for row, k in enumerate(active):
            terms[k].append(
                np.stack([log_s0[row, : stop[row]], log_s1[row, : stop[row]], np.sign(coef[row, : stop[row]])])
            )
        active, start, chunk = active[~done], start + chunk, chunk * 2

    def signed_logsumexp(log_s: np.ndarray, sign: np.ndarray) -> float:
        top = log_s.max()
        return float(top + np.log(np.sum(sign * np.exp(log_s - top))))

    log_a = []
    for parts in terms:
        log_s0, log_s1, sign = np.concatenate(parts, axis=1)
        log_a.append(np.logaddexp(signed_logsumexp(log_s0, sign), signed_logsumexp(log_s1, sign)))
    out[frac] = np.asarray(log_a) / (alphas - 1)
    return out


@functools.cache
def _rdp_of_one_step(sample_rate: float, sigma: float) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian step at Opacus' default orders."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp

    return rdp.compute_rdp(q=sample_rate, noise_multiplier=sigma, steps=1, orders=RDPAccountant.DEFAULT_ALPHAS)


def rdp_epsilon(history: Sequence[tuple[float, float, int]], delta: float) -> float:
    """ε at δ of an Opacus RDP accountant whose history is `history` ((σ, sample rate, steps) per phase): the same
    sum over phases and conversion as RDPAccountant.get_epsilon."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp

    if not history:  # nothing spent yet (Opacus answers 0 too)
        return 0.0
    curve = sum([_rdp_of_one_step(q, sigma) * steps for sigma, q, steps in history])
    eps, _ = rdp.get_privacy_spent(orders=RDPAccountant.DEFAULT_ALPHAS, rdp=curve, delta=delta)
    return float(eps)


def _dp_batches(private: _Private):
    """Index batches from the Poisson-sampled loader, skipping empty draws."""
    for (idx,) in private.loader:
        if len(idx):
            yield idx


def train_dpsgd(
    model: nn.Module, data: Sequence[Sequence[int]], cfg: TrainConfig, on_epoch: EpochHook | None = None
) -> tuple[nn.Module, float]:
    """DP-SGD on every sentence; returns the model and ε at δ."""
    engine = _Private(model, len(data), cfg, cfg.epochs)
    engine.module.train()
    for epoch in tqdm(range(cfg.epochs), desc="DPSGD", leave=False):
        for idx in _dp_batches(engine):
            engine.dp_step(pad([data[i] for i in idx]))
        _report(on_epoch, epoch, engine.module, engine.epsilon(cfg.delta))
    engine.finish()
    return model, engine.epsilon(cfg.delta)


def train_sdp(
    model: nn.Module,
    data: Sequence[Sequence[int]],
    marks: Sequence[np.ndarray],
    redacted: Sequence[Sequence[int]],
    redacted_marks: Sequence[np.ndarray],
    cfg: TrainConfig,
    on_epoch: EpochHook | None = None,
) -> tuple[nn.Module, float]:
    """Selective DP-SGD (Shi et al.): per batch, a non-private step on the π-redacted sentences (loss on their
    unmarked ids), then a DP-SGD step on the raw sentences whose loss covers only the ids π flags (`marks`)."""
    engine = _Private(model, len(data), cfg, cfg.epochs)
    engine.module.train()
    for epoch in tqdm(range(cfg.epochs), desc="S-DP", leave=False):
        for idx in _dp_batches(engine):
            engine.public_step(pad([redacted[i] for i in idx]), 1.0 - pad_float([redacted_marks[i] for i in idx]))
            engine.dp_step(pad([data[i] for i in idx]), pad_float([marks[i] for i in idx]))
        _report(on_epoch, epoch, engine.module, engine.epsilon(cfg.delta))
    engine.finish()
    return model, engine.epsilon(cfg.delta)


def pad_float(rows: Sequence[np.ndarray]) -> torch.Tensor:
    """Right-pad float rows with 0 into a (B, T) tensor."""
    out = torch.zeros(len(rows), max(len(r) for r in rows))
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(r)
    return out


def _confidentiality(engine: _Private, delta: float, gamma: float) -> float:
    """CRT's confidentiality ε: the DP ε at δ/γ amplified by γ (0 under a perfect policy)."""
    from .accounting import confidentiality_epsilon

    if not engine.cfg.noise:  # clipped steps alone promise nothing
        return math.inf
    return float(confidentiality_epsilon(engine.epsilon(delta / gamma), gamma)) if gamma > 0 else 0.0


def train_crt(
    model: nn.Module,
    public: Sequence[Sequence[int]],
    private: Sequence[Sequence[int]],
    cfg: TrainConfig,
    gamma: float,
    on_epoch: EpochHook | None = None,
) -> tuple[nn.Module, float, float]:
    """CRT: each epoch, one SGD epoch on D_pub, then one DP-SGD epoch on D_pri; batches never mix the two.
    Returns the model, ε_dp at δ and the confidentiality ε at δ/γ amplified by γ (the hook sees the latter)."""
    engine = _Private(model, len(private), cfg, cfg.epochs)
    gen = torch.Generator().manual_seed(cfg.seed)
    engine.module.train()
    for epoch in tqdm(range(cfg.epochs), desc="CRT", leave=False):
        for idx in _batches(len(public), cfg.batch, gen):
            engine.public_step(pad([public[i] for i in idx]))
        for idx in _dp_batches(engine):
            engine.dp_step(pad([private[i] for i in idx]))
        _report(on_epoch, epoch, engine.module, _confidentiality(engine, cfg.delta, gamma))
    engine.finish()
    return model, engine.epsilon(cfg.delta), _confidentiality(engine, cfg.delta, gamma)


def train_split_plain(
    model: nn.Module,
    public: Sequence[Sequence[int]],
    private: Sequence[Sequence[int]],
    cfg: TrainConfig,
    on_epoch: EpochHook | None = None,
) -> nn.Module:
    """CRT's schedule without DP: each epoch, one SGD epoch on D_pub, then one plain SGD epoch on D_pri in batches of
    `dp_batch` (an empty `private` drops D_pri). The factorial's arms that separate DP-SGD from the split."""
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = _optimizer(model, cfg.lr, cfg)
    model.train()
    for epoch in tqdm(range(cfg.epochs), desc="split", leave=False):
        for data, size in ((public, cfg.batch), (private, cfg.dp_batch)):
            for idx in _batches(len(data), size, gen):
                _sgd_step(model, opt, sample_loss(model, pad([data[i] for i in idx])), cfg.clip)
        _report(on_epoch, epoch, model, None)
    return model
