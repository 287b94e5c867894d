"""Membership detectors for causal LMs (Min-K%, Min-K%++, PPL, Zlib, Lowercase, Ref, Neighbor, DC-PDD), scored in
batches.

Every score here is oriented so that higher means "more likely a member"; the authors' code uses the negation."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import metrics
from ..pretrained import next_token_stats

KS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
# Every detector detector_scores can return, by the method name the tables use (Ref-small is Ref with a second,
# smaller reference model, at `paper`): the page counts them from here
DETECTORS = ("PPL", "Zlib", "Lowercase", "Ref", "DC-PDD", "Min-K%", "Min-K%++", "Neighbor")
DCPDD_CAP = 0.01  # DC-PDD's upper bound a on each token's term: the default of the authors' code
DCPDD_MAX_TOKENS = 1024  # the authors count each reference text's first 1,024 tokens


def lowest_k_mean(values: torch.Tensor, mask: torch.Tensor, ks: Sequence[float]) -> torch.Tensor:
    """Mean of the lowest int(n·k) (at least 1) masked values per row, for every k: shape (len(ks), rows), float64."""
    n = mask.sum(1)
    if (n < 1).any():
        raise ValueError("every text needs at least one scored token (two tokens in all)")
    ordered = values.double().masked_fill(~mask, float("inf")).sort(dim=1).values
    csum = ordered.masked_fill(~torch.isfinite(ordered), 0.0).cumsum(1)
    out = []
    for k in ks:
        if not 0 < k <= 1:
            raise ValueError(f"k is a fraction in (0, 1], got {k}")
        take = torch.clamp((n.double() * k).floor().long(), min=1)  # int(len * ratio), as the authors' code
        out.append(csum.gather(1, (take - 1)[:, None])[:, 0] / take)
    return torch.stack(out)


@dataclass
class TokenScores:
    """Per text, the log-probability of each scored token (tokens 2..N) and, for Min-K%++, its z-score against the
    vocabulary's mean and spread at that position: everything a detector statistic is computed from."""

    lp: list[np.ndarray]
    z: list[np.ndarray] | None

    def arrays(self) -> dict[str, np.ndarray]:
        """The flat arrays it is stored as (concatenated values and per-text lengths)."""
        out = {"lengths": np.array([len(x) for x in self.lp], dtype=np.int64), "lp": _concat(self.lp)}
        if self.z is not None:
            out["z"] = _concat(self.z)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> TokenScores:
        """The inverse of `arrays`."""
        cuts = np.cumsum(arrays["lengths"])[:-1]
        return cls(np.split(arrays["lp"], cuts), np.split(arrays["z"], cuts) if "z" in arrays else None)

    def table(self, ks: Sequence[float] = KS, cuts: Sequence[int] = ()) -> pd.DataFrame:
        """detector statistics of every text (stats_table), in order."""
        width = max([1, *(len(x) for x in self.lp)])
        lp, mask = _padded(self.lp, width)
        z = _padded(self.z, width)[0] if self.z is not None else None
        return pd.DataFrame(stats_table(lp, z, mask, ks, cuts))


def _concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)


def _padded(rows: Sequence[np.ndarray], width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, mask) of ragged rows right-padded with zeros to `width`."""
    values, mask = torch.zeros(len(rows), width), torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        values[i, : len(r)], mask[i, : len(r)] = torch.from_numpy(np.asarray(r, np.float32)), True
    return values, mask


def batch_tokens(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, plus: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """One forward pass: (log p of tokens 2..N, their Min-K%++ z-scores or None, mask) of right-padded rows."""
    with torch.inference_mode():
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
        token_lp, mu, sigma, mask = next_token_stats(logits, input_ids, attention_mask, plus)
    return token_lp, ((token_lp - mu) / sigma if plus else None), mask


def stats_table(
    token_lp: torch.Tensor,
    z: torch.Tensor | None,
    mask: torch.Tensor,
    ks: Sequence[float] = KS,
    cuts: Sequence[int] = (),
) -> dict[str, np.ndarray]:
    """Mean token NLL, scored tokens, Min-K% and (with z) Min-K%++ at every k of masked rows.

    For each length c in `cuts`, also the mean NLL and Min-K% of each row cut to its first c tokens ('loss@c',
    'mink_k@c'): a causal LM's log-probabilities of those tokens do not depend on what follows them, so they are
    the first c - 1 scored positions (a test compares them with scoring the cut texts)."""
    out = _stats(token_lp, mask, ks)
    if z is not None:
        for k, v in zip(ks, lowest_k_mean(z, mask, ks)):
            out[f"minkpp_{k:g}"] = v.numpy()
    for c in cuts:
        if c < 2:
            raise ValueError(f"a cut keeps at least 2 tokens, got {c}")
        cut = _stats(token_lp[:, : c - 1], mask[:, : c - 1], ks)
        out.update({f"{name}@{c}": v for name, v in cut.items() if name != "tokens"})
    return out


def batch_scores(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    ks: Sequence[float] = KS,
    plus: bool = True,
) -> dict[str, np.ndarray]:
    """stats_table of one forward pass over a batch (the throughput benchmark's scoring step)."""
    return stats_table(*batch_tokens(model, input_ids, attention_mask, plus), ks)


def _stats(token_lp: torch.Tensor, mask: torch.Tensor, ks: Sequence[float]) -> dict[str, np.ndarray]:
    """Mean NLL, scored tokens and Min-K% at every k of masked per-token log-probabilities."""
    n = mask.sum(1)
    out = {"loss": (-(token_lp * mask).sum(1).double() / n).numpy(), "tokens": n.numpy()}
    for k, v in zip(ks, lowest_k_mean(token_lp, mask, ks)):
        out[f"mink_{k:g}"] = v.numpy()
    return out


def forward_only(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> None:
    """The plain forward pass the scoring throughput is compared with."""
    with torch.inference_mode():
        model(input_ids=input_ids, attention_mask=attention_mask)


def token_scores(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    plus: bool = True,
    batch_size: int = 16,
    max_length: int = 256,
    desc: str = "scoring",
) -> TokenScores:
    """TokenScores of `texts` (first `max_length` tokens), batched by similar length (right padding masked), in
    the order of `texts`."""
    from tqdm.auto import tqdm

    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    device = next(model.parameters()).device
    lp: list[np.ndarray] = [np.zeros(0, np.float32)] * len(texts)
    z: list[np.ndarray] | None = [np.zeros(0, np.float32)] * len(texts) if plus else None
    for lo in tqdm(range(0, len(texts), batch_size), desc=desc, leave=False):
        idx = order[lo : lo + batch_size]
        batch = tokenizer(
            [texts[i] for i in idx], return_tensors="pt", padding=True, truncation=True, max_length=max_length
        )
        token_lp, token_z, mask = batch_tokens(
            model, batch["input_ids"].to(device), batch["attention_mask"].to(device), plus
        )
        for row, i in enumerate(idx):
            n = int(mask[row].sum())
            lp[i] = token_lp[row, :n].numpy().copy()
            if z is not None:
                z[i] = token_z[row, :n].numpy().copy()
    return TokenScores(lp, z)


def token_frequencies(tokenizer: Any, texts: Sequence[str], max_length: int = DCPDD_MAX_TOKENS) -> np.ndarray:
    """DC-PDD's reference distribution: how often each vocabulary id occurs in `texts` (each cut to its first
    `max_length` tokens), Laplace-smoothed, (count + 1) / (total + vocabulary size). The authors count C4."""
    counts = np.zeros(len(tokenizer), np.int64)
    for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]:
        counts += np.bincount(ids, minlength=len(counts))[: len(counts)]
    return (counts + 1) / (counts.sum() + len(counts))


def dc_pdd(
    lp: Sequence[np.ndarray], ids: Sequence[Sequence[int]], freq: np.ndarray, cap: float = DCPDD_CAP
) -> np.ndarray:
    """DC-PDD (Zhang et al. 2024) of each text, higher = member: over the first occurrence of each distinct scored
    token (tokens 2..N, `ids` being the text's whole tokenization and `lp` their log-probabilities), the mean of
    min(p · log(1 / f), cap), with p the model's probability of the token and f its reference frequency."""
    out = np.empty(len(lp))
    for i, (row, text_ids) in enumerate(zip(lp, ids)):
        scored = np.asarray(text_ids[1:], np.int64)
        if len(scored) != len(row):
            raise ValueError(f"text {i}: {len(row)} scored log-probabilities for {len(scored)} tokens after the first")
        _, first = np.unique(scored, return_index=True)
        terms = np.exp(np.asarray(row, np.float64)[first]) * -np.log(freq[scored[first]])
        out[i] = np.minimum(terms, cap).mean()
    return out


def zlib_length(text: str) -> int:
    """Bytes of the zlib-compressed UTF-8 text (the Zlib detector's denominator)."""
    return len(zlib.compress(text.encode("utf-8")))


def detector_scores(
    target: pd.DataFrame,
    texts: Sequence[str],
    ks: Sequence[float] = KS,
    lower: pd.DataFrame | None = None,
    refs: Mapping[str, pd.DataFrame] | None = None,
    neighbor_loss: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Every detector's per-text score (higher = member) from TokenScores.table frames of the target and its helpers."""
    loss = target["loss"].to_numpy()
    out = {"PPL": -loss, "Zlib": -loss / np.array([zlib_length(t) for t in texts])}
    for k in ks:
        out[f"Min-K% {k:g}"] = target[f"mink_{k:g}"].to_numpy()
        if f"minkpp_{k:g}" in target:
            out[f"Min-K%++ {k:g}"] = target[f"minkpp_{k:g}"].to_numpy()
    if lower is not None:
        out["Lowercase"] = lower["loss"].to_numpy() / loss
    for name, ref in (refs or {}).items():
        out[name] = -(loss - ref["loss"].to_numpy())
    if neighbor_loss is not None:
        out["Neighbor"] = -(loss - neighbor_loss)
    if "dcpdd" in target:
        out["DC-PDD"] = target["dcpdd"].to_numpy()
    return out


def cut_scores(target: pd.DataFrame, ks: Sequence[float], cut: int) -> dict[str, np.ndarray]:
    """PPL and Min-K% at every k of the texts cut to their first `cut` tokens, from a TokenScores.table frame with that
    cut."""
    out = {"PPL": -target[f"loss@{cut}"].to_numpy()}
    for k in ks:
        out[f"Min-K% {k:g}"] = target[f"mink_{k:g}@{cut}"].to_numpy()
    return out


def evaluate(scores: Mapping[str, np.ndarray], labels: np.ndarray, fpr: float = 0.05) -> pd.DataFrame:
    """AUC and TPR at `fpr` of every detector; `method` and `k` split out of names like 'Min-K% 0.2'."""
    rows = []
    for name, s in scores.items():
        method, _, k = name.partition(" ")
        rows.append(
            {
                "method": method,
                "k": float(k) if k else np.nan,
                "auc": metrics.auroc(labels, s),
                "tpr_at_5fpr": metrics.tpr_at_fpr(labels, s, fpr),
            }
        )
    return pd.DataFrame(rows)


def neighbors(
    texts: Sequence[str], mlm: Any, mlm_tokenizer: Any, n: int = 25, seed: int = 0, batch_size: int = 64
) -> list[list[str]]:
    """Neighbor attack perturbations: `n` copies of each text, each with one word swapped for the MLM's top other guess."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    jobs: list[tuple[int, list[str], int]] = []
    for i, text in enumerate(texts):
        words = text.split(" ")
        for pos in rng.choice(len(words), size=min(n, len(words)), replace=False):
            jobs.append((i, words, int(pos)))
    out: list[list[str]] = [[] for _ in texts]
    device = next(mlm.parameters()).device
    for lo in tqdm(range(0, len(jobs), batch_size), desc="neighbors", leave=False):
        chunk = jobs[lo : lo + batch_size]
        masked = [" ".join(w[:p] + [mlm_tokenizer.mask_token] + w[p + 1 :]) for _, w, p in chunk]
        enc = mlm_tokenizer(masked, return_tensors="pt", padding=True, truncation=True, max_length=512).to(device)
        with torch.inference_mode():
            logits = mlm(**enc).logits
        is_mask = enc["input_ids"] == mlm_tokenizer.mask_token_id
        where = is_mask.float().argmax(1)
        top = logits[torch.arange(len(chunk), device=device), where].topk(2, dim=-1).indices.cpu()
        for j, (i, words, pos) in enumerate(chunk):
            if not is_mask[j].any():  # the masked word fell beyond the MLM's length limit
                continue
            guesses = [mlm_tokenizer.decode([t]).strip() for t in top[j].tolist()]
            swap = next((g for g in guesses if g and g != words[pos]), guesses[-1])
            out[i].append(" ".join(words[:pos] + [swap] + words[pos + 1 :]))
    return out
