"""Confidentially Redacted Training's data side: sentence split, tokenize, SHA-1 dedup, redaction policies, D_pub/D_pri
(Zhao, Li & Wang, NAACL 2022)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .customersim import STREET_SUFFIXES, Turn

MASK = "<MASK>"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_TOKEN = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")


@dataclass(frozen=True)
class Sentence:
    """One data point: a sentence's tokens, their gold secret labels and a stable key (dialogue:index)."""

    key: str
    text: str
    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    labels: tuple[str | None, ...]

    @property
    def has_secret(self) -> bool:
        """Whether any token is a gold secret."""
        return any(label is not None for label in self.labels)


def tokenize(text: str) -> list[tuple[str, int]]:
    """Words and punctuation with their offsets; a word holding a digit is split into characters."""
    out: list[tuple[str, int]] = []
    for m in _TOKEN.finditer(text):
        word = m.group()
        if any(c.isdigit() for c in word):
            out += [(c, m.start() + i) for i, c in enumerate(word)]
        else:
            out.append((word, m.start()))
    return out


def _label(start: int, spans: Sequence[tuple[int, int, str]]) -> str | None:
    """Secret type of the span covering character `start`, if any."""
    return next((kind for s, e, kind in spans if s <= start < e), None)


def split_sentences(dialogues: Sequence[Sequence[Turn]], prefix: str = "") -> list[Sentence]:
    """Step 1 of CRT: split every turn into sentences, then tokenize each, carrying gold labels."""
    out: list[Sentence] = []
    for d, turns in enumerate(dialogues):
        index = 0
        for turn in turns:
            bounds = [0] + [m.end() for m in _SENTENCE_END.finditer(turn.text)] + [len(turn.text) + 1]
            for a, b in zip(bounds, bounds[1:]):
                text = turn.text[a:b].rstrip()
                spans = [(s - a, e - a, k) for s, e, k in turn.spans if a <= s < b]
                toks = tokenize(text)
                out.append(
                    Sentence(
                        f"{prefix}{d}:{index}",
                        text,
                        tuple(t for t, _ in toks),
                        tuple(o for _, o in toks),
                        tuple(_label(o, spans) for _, o in toks),
                    )
                )
                index += 1
    return out


def deduplicate(token_lists: Sequence[Sequence[str]]) -> tuple[list[list[str]], np.ndarray]:
    """Step 2: SHA-1 of each sentence; from its second occurrence on, a duplicate becomes [MASK]."""
    seen: set[str] = set()
    out, dup = [], np.zeros(len(token_lists), dtype=bool)
    for i, toks in enumerate(token_lists):
        digest = hashlib.sha1(" ".join(toks).encode("utf-8")).hexdigest()
        if digest in seen:
            out.append([MASK])
            dup[i] = True
        else:
            seen.add(digest)
            out.append(list(toks))
    return out, dup


def _uniform(*parts: object) -> float:
    """A reproducible uniform number in [0, 1) from the SHA-1 of `parts`."""
    digest = hashlib.sha1(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


_SUFFIX = "|".join(STREET_SUFFIXES)
# "name" needs no look-ahead excluding street suffixes: "address" comes first and wins the overlap inside an address,
# while surnames such as Park, Hill, Green, Ford, Brooks, Wells or Lane are street suffixes too.
POLICY_PATTERNS: dict[str, re.Pattern[str]] = {
    "order": re.compile(r"\b\d{3}-\d{5}-\d{4}\b"),
    "phone": re.compile(r"\b\d{3}[-.]?\d{3}[-.]?\d{4}\b"),
    "tracking": re.compile(r"\b[A-Z0-9]{10}\b"),
    "id": re.compile(r"\b\d{6}\b"),
    "address": re.compile(rf"\b\d{{1,5}} (?:[A-Z][a-z]+ )+(?:{_SUFFIX})\b"),
    "name": re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b"),
}


@dataclass(frozen=True)
class RegexPolicy:
    """π: regex screening that misses each detected secret occurrence with probability `gamma` (hash-seeded)."""

    gamma: float = 0.0
    seed: int = 0
    missed_kinds: tuple[str, ...] = ()  # formats π misses every time (a real policy's blind spot), beside γ

    def detections(self, text: str) -> list[tuple[int, int, str]]:
        """Every regex match (start, end, type), before any miss; earlier patterns win overlaps."""
        found: list[tuple[int, int, str]] = []
        for kind, pattern in POLICY_PATTERNS.items():
            for m in pattern.finditer(text):
                if not any(s < m.end() and m.start() < e for s, e, _ in found):
                    found.append((m.start(), m.end(), kind))
        return sorted(found)

    def missed(self, key: str, start: int) -> bool:
        """Whether π misses the secret at `start` of sentence `key`; nested in gamma (a miss stays a miss)."""
        return _uniform(self.seed, key, start) < self.gamma

    def flags(self, sentence: Sentence) -> np.ndarray:
        """Per-token flags: True where π detects a secret it does not miss."""
        flags = np.zeros(len(sentence.tokens), dtype=bool)
        offsets = np.asarray(sentence.starts)
        for s, e, kind in self.detections(sentence.text):
            if kind not in self.missed_kinds and not self.missed(sentence.key, s):
                flags |= (offsets >= s) & (offsets < e)
        return flags


def conservative_flag(sentence: Sentence) -> bool:
    """π_c: flag any sentence with a digit or a capitalized word after its first token (other than 'I')."""
    return any(c.isdigit() for c in sentence.text) or any(t[0].isupper() and t != "I" for t in sentence.tokens[1:])


def redact(tokens: Sequence[str], flags: np.ndarray) -> list[str]:
    """Step 3: replace every flagged token with the same [MASK] that deduplication uses."""
    return [MASK if f else t for t, f in zip(tokens, flags)]


@dataclass
class CRTSplit:
    """The output of Algorithm 1: processed token lists and which of them are private."""

    tokens: list[list[str]]
    private: np.ndarray
    duplicate: np.ndarray
    removed: np.ndarray  # duplicates dropped by the "remove" reading (all False under "mask")

    def part(self, private: bool) -> list[list[str]]:
        """D_pri (private=True) or D_pub, without removed duplicates."""
        return [t for t, p, r in zip(self.tokens, self.private, self.removed) if p == private and not r]


DEDUP_READINGS = ("mask", "remove")


def crt_split(sentences: Sequence[Sentence], policy: RegexPolicy, dedup: str = "mask") -> CRTSplit:
    """Algorithm 1 in the paper's order: dedup (on split, tokenized sentences), redact with π, split on [MASK] or π_c.

    dedup="mask" is Algorithm 1 with A.6 (a later duplicate becomes [MASK] and so goes to D_pri); dedup="remove" is
    Section 4's "remove identical sequences" (a later duplicate is dropped from both sets)."""
    if dedup not in (*DEDUP_READINGS, "none"):
        raise ValueError(f"dedup must be one of {DEDUP_READINGS} or 'none', got {dedup!r}")
    deduped, dup = deduplicate([s.tokens for s in sentences])
    if dedup == "none":  # the factorial's arm without deduplication: every sentence kept as it is
        deduped, dup = [list(s.tokens) for s in sentences], np.zeros(len(sentences), dtype=bool)
    tokens = [toks if d else redact(toks, policy.flags(s)) for toks, d, s in zip(deduped, dup, sentences)]
    private = np.array([MASK in t or conservative_flag(s) for t, s in zip(tokens, sentences)], dtype=bool)
    removed = dup.copy() if dedup == "remove" else np.zeros(len(tokens), dtype=bool)
    return CRTSplit(tokens, private & ~removed, dup, removed)


def masked_corpus(sentences: Sequence[Sentence], policy: RegexPolicy) -> tuple[list[list[str]], list[np.ndarray]]:
    """Redaction with π alone (no dedup): the 'non-private with mask' data and S-DP's private-token flags."""
    flags = [policy.flags(s) for s in sentences]
    return [redact(s.tokens, f) for s, f in zip(sentences, flags)], flags


# --- Bayesian confidentiality amplification (Fig. 6) -------------------------------------------------------
