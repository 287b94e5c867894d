"""CustomerSim: seeded track-package support dialogues with gold-labelled secrets (after Selective DP's SimDial).

The data are simulated, as in the paper. Names and streets come from small hand-written lists of
common US first names, surnames and street names (Python's standard library ships none).
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field

FIRST_NAMES = (
    "James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth William Barbara Richard Susan "
    "Joseph Jessica Thomas Sarah Charles Karen Christopher Lisa Daniel Nancy Matthew Betty Anthony Sandra "
    "Mark Margaret Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Carol "
    "Kevin Amanda Brian Melissa George Deborah Timothy Stephanie Ronald Rebecca Jason Sharon Edward Laura"
).split()
LAST_NAMES = (
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez "
    "Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark "
    "Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams "
    "Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts"
).split()
STREETS = (
    "Main Oak Pine Maple Cedar Elm Washington Lake Hill Park Walnut Spruce Ridge Church Willow Sunset "
    "Highland Jefferson Lincoln Madison Franklin Chestnut Jackson Meadow Forest River Spring Center"
).split()
STREET_SUFFIXES = ("Street", "Avenue", "Road", "Lane", "Drive", "Boulevard", "Court", "Way", "Place")
SECRET_TYPES = ("name", "address", "phone", "order", "tracking", "id")

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


def secret(kind: str, rng: random.Random) -> str:
    """A fresh secret value of the given type."""
    if kind == "name":
        return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    if kind == "address":
        return f"{rng.randint(1, 9999)} {rng.choice(STREETS)} {rng.choice(STREET_SUFFIXES)}"
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
    kinds = ["name"] + rng.sample(["phone", "order", "tracking", "address"], rng.randint(1, 3))
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


def canary_turn(digits: str) -> Turn:
    """The canary utterance 'My ID is: <digits>.' with its digits labelled as a secret."""
    return make_turn("USR", [("My ID is: ", None), (digits, "id"), (".", None)])


def insert_canaries(dialogues: list[list[Turn]], canaries: list[str], copies: int, seed: int) -> list[list[Turn]]:
    """Copy of `dialogues` with each canary inserted `copies` times, at random turns of random dialogues."""
    rng = random.Random(seed)
    out = [list(d) for d in dialogues]
    for digits in canaries:
        for _ in range(copies):
            d = out[rng.randrange(len(out))]
            d.insert(rng.randint(1, len(d)), canary_turn(digits))
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
