"""Notebook parameters: declared specs, named profiles, and validation with one-line errors.

A notebook's `parameters` cell assigns `profile = "default"` and sets every other parameter to
`None`, which means "take the profile's value". The next cell calls `resolve(globals(), SPEC)`.
An explicit value (papermill `-p`, or `python -m repro run -p`) always wins over the profile.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

PROFILES = ("smoke", "default", "paper")
_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


class ParameterError(ValueError):
    """A notebook parameter is unknown, of the wrong type or out of range."""


@dataclass(frozen=True)
class Param:
    """One parameter: its type, allowed values, per-profile values and a help line."""

    type: type
    default: Any
    smoke: Any = None
    paper: Any = None
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    help: str = ""
    items: type | None = None
    item_choices: tuple[Any, ...] | None = None
    may_be_empty: bool = False  # a list parameter whose empty value means "none of them"

    def profile_value(self, profile: str) -> Any:
        """The value this parameter takes under `profile` (falls back to the default profile)."""
        value = {"smoke": self.smoke, "paper": self.paper}.get(profile)
        return self.default if value is None else value

    def allowed(self) -> str:
        """Human-readable description of the allowed values."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        name = self.type.__name__ if self.items is None else f"list of {self.items.__name__}"
        if self.item_choices is not None:
            return f"{name}, each one of " + ", ".join(repr(c) for c in self.item_choices)
        if self.low is not None and self.high is not None:
            return f"{name} in [{self.low}, {self.high}]"
        if self.low is not None:
            return f"{name} >= {self.low}"
        if self.high is not None:
            return f"{name} <= {self.high}"
        return name


def _coerce_scalar(name: str, value: Any, kind: type, spec: Param) -> Any:
    """Check one scalar against `kind`, allowing int -> float and refusing NaN and infinities; raise ParameterError."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(f"parameter {name!r}: got {value!r}, expected a finite number ({spec.allowed()})")
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            value = float(value)
        except OverflowError:
            raise ParameterError(f"parameter {name!r}: {value} is out of range, expected {spec.allowed()}") from None
    if isinstance(value, bool) and kind is not bool:
        raise ParameterError(f"parameter {name!r}: got {value!r}, expected {spec.allowed()}")
    if not isinstance(value, kind):
        raise ParameterError(f"parameter {name!r}: got {value!r} ({type(value).__name__}), expected {spec.allowed()}")
    if (spec.low is not None and value < spec.low) or (spec.high is not None and value > spec.high):
        raise ParameterError(f"parameter {name!r}: {value!r} is out of range, expected {spec.allowed()}")
    return value


def check_value(name: str, value: Any, spec: Param) -> Any:
    """Return `value` validated (and int widened to float) against `spec`, or raise ParameterError."""
    if spec.items is not None:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list) or not (value or spec.may_be_empty):
            kind = spec.allowed() if spec.may_be_empty else f"non-empty {spec.allowed()}"
            raise ParameterError(f"parameter {name!r}: got {value!r}, expected a {kind}")
        value = [_coerce_scalar(name, v, spec.items, spec) for v in value]
        unknown = [v for v in value if spec.item_choices is not None and v not in spec.item_choices]
        if unknown:
            raise ParameterError(f"parameter {name!r}: got item {unknown[0]!r}, expected {spec.allowed()}")
    else:
        value = _coerce_scalar(name, value, spec.type, spec)
    if spec.choices is not None and value not in spec.choices:
        raise ParameterError(f"parameter {name!r}: got {value!r}, expected {spec.allowed()}")
    return value


def _user_names(namespace: dict[str, Any]) -> dict[str, Any]:
    """Names a parameters cell (or papermill's injected cell) could have set."""
    return {
        k: v
        for k, v in namespace.items()
        if not k.startswith("_")
        and k not in _IPYTHON_NAMES
        and not isinstance(v, (types.ModuleType, types.FunctionType, type, Param))
    }


def resolve(namespace: dict[str, Any], spec: dict[str, Param], profile_key: str = "profile") -> dict[str, Any]:
    """Resolve profile values under explicit overrides in `namespace`, validating every parameter."""
    profile = namespace.get(profile_key, "default")
    if profile not in PROFILES:
        raise ParameterError(f"parameter {profile_key!r}: got {profile!r}, expected one of {', '.join(PROFILES)}")
    unknown = sorted(set(_user_names(namespace)) - set(spec) - {profile_key})
    if unknown:
        raise ParameterError(f"unknown parameter {unknown[0]!r}: allowed are {', '.join([profile_key, *spec])}")
    resolved: dict[str, Any] = {profile_key: profile}
    for name, param in spec.items():
        value = namespace.get(name)
        value = param.profile_value(profile) if value is None else value
        resolved[name] = check_value(name, value, param)
    return resolved


Check = Callable[[dict[str, Any]], str | None]


def run_checks(resolved: dict[str, Any], checks: Sequence[Check]) -> None:
    """Run cross-parameter checks on resolved parameters; each raises ParameterError or returns an error string."""
    for check in checks:
        problem = check(resolved)
        if problem:
            raise ParameterError(" ".join(str(problem).split()))


def spec_table(spec: dict[str, Param], resolved: dict[str, Any]) -> list[dict[str, Any]]:
    """Tidy records describing each parameter: value in use, allowed values, help."""
    return [
        {"parameter": name, "value": resolved[name], "allowed": p.allowed(), "help": p.help} for name, p in spec.items()
    ]


class Resolved(dict):
    """Resolved parameters, readable as attributes (P.n_tests) or keys (P["n_tests"])."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def only(self, *names: str) -> Resolved:
        """The parameters `names` alone: what a cached step that reads only them is keyed by. Reading any other raises
        (AttributeError, KeyError), so a step cannot depend on a parameter its key leaves out."""
        return Resolved({n: self[n] for n in names})
