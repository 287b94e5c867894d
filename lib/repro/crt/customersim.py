"""CustomerSim: seeded track-package support dialogues with gold-labelled secrets (after Selective DP's SimDial).

The data are simulated, as in the paper. Person names and street addresses come from Faker's en_US provider data
(690 first names and 1,000 surnames, drawn with Faker's US frequency weights, and Faker's street suffixes), with the
`random.Random` handed to `secret` as Faker's source of randomness, so a corpus depends on its seed alone. Parts that
are not one capitalized word (none in Faker 40's en_US data, but e.g. McDonald, O'Connor or hyphenated names) are
rejected and redrawn, as are building numbers with a leading zero, so the tokenizer and the regex policy see a name as
"First Last" and an address as "<3-5 digit number> <first name or surname> <suffix>" ("4132 Lisa Mountain").
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field

from faker import Faker
from faker.providers.address.en_US import Provider as AddressProvider

_FAKE = Faker("en_US")  # one shared generator; `_faker(rng)` points it at the caller's Random before every draw
_WORD = re.compile(r"[A-Z][a-z]+")  # one capitalized word: what the tokenizer and the regex policy expect
STREET_SUFFIXES = tuple(dict.fromkeys(s for s in AddressProvider.street_suffixes if _WORD.fullmatch(s)))
SECRET_TYPES = ("name", "address", "phone", "order", "tracking", "id")
GENERATOR = (
    2  # bump when the dialogues change: part of every cache key built on them (2: every dialogue asks the address)
)

Piece = tuple[str, str | None]  # (text, secret type or None)


@dataclass
class Turn:
    """One utterance: its text and the character spans of its secrets, (start, end, type)."""

    speaker: str
    text: str
    spans: list[tuple[int, int, str]] = field(default_factory=list)


def make_turn(speaker: str, pieces: list[Piece]) -> Turn:
    """Concatenate labelled pieces into a Turn, recording each secret's span."""
    text, spans = "", []
    for piece, label in pieces:
        if label is not None:
            spans.append((len(text), len(text) + len(piece), label))
        text += piece
    return Turn(speaker, text, spans)


def _digits(rng: random.Random, n: int) -> str:
    """n random decimal digits."""
    return "".join(rng.choice(string.digits) for _ in range(n))


def _faker(rng: random.Random) -> Faker:
    """The shared en_US Faker, drawing from `rng` (so every draw depends on `rng` alone)."""
    _FAKE.random = rng
    return _FAKE


def _draw(make: Callable[[], str], ok: Callable[[str], object]) -> str:
    """Call `make` until its value passes `ok` (reject and redraw)."""
    while not ok(value := make()):
        pass
    return value


def _is_street(name: str) -> bool:
    """Whether a Faker street name is capitalized words ending in one of STREET_SUFFIXES ('Lisa Mountain')."""
    words = name.split(" ")
    return len(words) >= 2 and all(_WORD.fullmatch(w) for w in words) and words[-1] in STREET_SUFFIXES


def secret(kind: str, rng: random.Random) -> str:
    """A fresh secret value of the given type."""
    if kind == "name":
        fake = _faker(rng)
        return f"{_draw(fake.first_name, _WORD.fullmatch)} {_draw(fake.last_name, _WORD.fullmatch)}"
    if kind == "address":
        fake = _faker(rng)
        number = _draw(fake.building_number, lambda n: n.isdigit() and not n.startswith("0"))
        return f"{number} {_draw(fake.street_name, _is_street)}"
    if kind == "phone":
        sep = rng.choice(("", "-", "."))
        return sep.join((_digits(rng, 3), _digits(rng, 3), _digits(rng, 4)))
    if kind == "order":
        return f"{_digits(rng, 3)}-{_digits(rng, 5)}-{_digits(rng, 4)}"
    if kind == "tracking":
        return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(10))
    if kind == "id":
        return _digits(rng, 6)
    raise ValueError(f"unknown secret type {kind!r}; expected one of {SECRET_TYPES}")


# Templates: plain strings, with {kind} marking where a secret goes.
GREETINGS = (
    "Hello, welcome to customer service. How can I help you?",
    "Hi there. What can I do for you today?",
    "Good morning, thanks for calling. How may I help?",
)
REQUESTS = (
    "I want to track my package.",
    "Where is my package?",
    "I need to check the status of my order.",
    "My parcel has not arrived yet. Can you check it?",
    "Can you tell me where my delivery is?",
)
ASK = {
    "name": ("Sure. May I have your name?", "Of course. Can I get your full name?"),
    "phone": ("What is your phone number?", "Could you give me a phone number on the account?"),
    "order": ("Could you give me the order number?", "What is the order number, please?"),
    "tracking": ("Do you have the tracking number?", "Can you read me the tracking number?"),
    "address": ("Can you confirm the shipping address?", "Which address was it shipped to?"),
}
ANSWER = {
    "name": ("My name is {name}.", "This is {name}.", "It is {name}."),
    "phone": ("My phone number is {phone}.", "It is {phone}.", "You can reach me at {phone}."),
    "order": ("The order number is {order}.", "It is {order}.", "Sure, it is {order}."),
    "tracking": ("The tracking number is {tracking}.", "It says {tracking} on the receipt."),
    "address": ("I live at {address}.", "Ship it to {address}.", "The address is {address}."),
}
STATUS = (
    "Thank you. Your package is on its way and will arrive in {n} days.",
    "Thanks. The package left our warehouse and should arrive in {n} days.",
    "I found it. It is at the local depot and arrives in {n} days.",
)
CLOSINGS = (
    ("Is there anything else I can help with?", "No, that is all. Thank you!", "You are welcome. Goodbye!"),
    ("Anything else today?", "No, thanks a lot.", "Have a nice day!"),
)


def fill(template: str, rng: random.Random) -> list[Piece]:
    """Split a template at its {kind} slots and fill each slot with a fresh secret."""
    pieces: list[Piece] = []
    rest = template
    while "{" in rest:
        head, tail = rest.split("{", 1)
        kind, rest = tail.split("}", 1)
        pieces.append((head, None))
        pieces.append((str(rng.randint(2, 9)), None) if kind == "n" else (secret(kind, rng), kind))
    pieces.append((rest, None))
    return pieces


OPENERS = ("", "", "Okay, ", "Alright, ", "Well, ", "Great, ", "Hmm, ", "Right, ", "So, ")
ITEMS = ("package", "parcel", "order", "delivery", "shipment", "box")
CLOSERS = ("", "", " please", " for me", " right now", " today", " if possible")


def vary(line: str, rng: random.Random) -> str:
    """A surface variant of a secret-free line: optional opener, synonym for the item, optional closer."""
    line = re.sub(r"\b(package|parcel|order|delivery)\b(?! number)", lambda _: rng.choice(ITEMS), line)
    opener = rng.choice(OPENERS)
    if opener:
        line = opener + line[0].lower() + line[1:] if not line.startswith("I ") else opener + line
    closer = rng.choice(CLOSERS)
    return (
        line[:-1] + closer + line[-1]
        if closer and line[-1] in ".?!" and line.count(".") + line.count("?") == 1
        else line
    )


def dialogue(rng: random.Random) -> list[Turn]:
    """One track-package dialogue: greeting, request, 2-4 secret exchanges, status, closing."""
    turns = [
        make_turn("SYS", [(vary(rng.choice(GREETINGS), rng), None)]),
        make_turn("USR", [(vary(rng.choice(REQUESTS), rng), None)]),
    ]
    # the name and the address in every dialogue (the paper's CustomerSim MIA members are addresses, Appendix A.5)
    extra = rng.sample(["phone", "order", "tracking"], rng.randint(0, 2))
    kinds = ["name"] + rng.sample(["address", *extra], len(extra) + 1)
    for kind in kinds:
        turns.append(make_turn("SYS", [(vary(rng.choice(ASK[kind]), rng), None)]))
        turns.append(make_turn("USR", fill(rng.choice(ANSWER[kind]), rng)))
    turns.append(make_turn("SYS", fill(rng.choice(STATUS), rng)))
    for i, line in enumerate(rng.choice(CLOSINGS)):
        turns.append(make_turn("USR" if i % 2 else "SYS", [(vary(line, rng), None)]))
    return turns


def corpus(n_dialogues: int, seed: int) -> list[list[Turn]]:
    """`n_dialogues` dialogues drawn from one seeded generator."""
    rng = random.Random(seed)
    return [dialogue(rng) for _ in range(n_dialogues)]


CANARY_ENDINGS = (
    "today", "again", "here", "now", "still", "too", "indeed", "anyway", "sir", "madam",
    "thanks", "please", "okay", "right", "then", "once", "twice", "so", "yes", "friend",
)  # fmt: skip


def canary_turn(digits: str, ending: str = "") -> Turn:
    """The canary utterance 'My ID is: <digits>.' (or '... <digits> <ending>.') with its digits labelled a secret."""
    return make_turn("USR", [("My ID is: ", None), (digits, "id"), (f" {ending}." if ending else ".", None)])


def insert_canaries(
    dialogues: list[list[Turn]], canaries: list[str], copies: int, seed: int, distinct: bool = False
) -> list[list[Turn]]:
    """Copy of `dialogues` with each canary inserted `copies` times, at random turns of random dialogues; with
    `distinct`, copy i ends in CANARY_ENDINGS[i], so that no two copies are the same sentence (dedup keeps them all)."""
    if distinct and copies > len(CANARY_ENDINGS):
        raise ValueError(f"at most {len(CANARY_ENDINGS)} distinct canary contexts, got {copies} copies")
    rng = random.Random(seed)
    out = [list(d) for d in dialogues]
    for digits in canaries:
        for i in range(copies):
            d = out[rng.randrange(len(out))]
            d.insert(rng.randint(1, len(d)), canary_turn(digits, CANARY_ENDINGS[i] if distinct else ""))
    return out


def look_alike(turn: Turn, rng: random.Random) -> Turn:
    """The same utterance with every secret replaced by a fresh secret of its type (a non-member)."""
    pieces: list[Piece] = []
    last = 0
    for start, end, kind in turn.spans:
        pieces += [(turn.text[last:start], None), (secret(kind, rng), kind)]
        last = end
    pieces.append((turn.text[last:], None))
    return make_turn(turn.speaker, pieces)
