"""repro.params: profiles, overrides and one-line validation errors."""

from __future__ import annotations

import pytest

from repro.params import Param, ParameterError, resolve

SPEC = {
    "n": Param(int, 100, smoke=10, low=1, high=1000, help="size"),
    "lr": Param(float, 1e-4, paper=1e-5, low=0.0),
    "mode": Param(str, "local", paper="hub", choices=("local", "hub")),
    "ks": Param(list, [5, 10], items=int, low=1, high=100),
    "flag": Param(bool, False),
}


def ns(**values):
    """A namespace as the parameters cell leaves it: profile plus None for 'the profile's value'."""
    base = {"profile": "default", **{k: None for k in SPEC}, "In": [], "_": None}
    return {**base, **values}


def test_profiles_give_their_values() -> None:
    assert resolve(ns(), SPEC) == {"profile": "default", "n": 100, "lr": 1e-4, "mode": "local", "ks": [5, 10], "flag": False}
    smoke = resolve(ns(profile="smoke"), SPEC)
    assert smoke["n"] == 10 and smoke["lr"] == 1e-4
    paper = resolve(ns(profile="paper"), SPEC)
    assert paper["mode"] == "hub" and paper["lr"] == 1e-5 and paper["n"] == 100


def test_explicit_value_beats_profile_and_int_widens_to_float() -> None:
    got = resolve(ns(profile="smoke", n=500, lr=1), SPEC)
    assert got["n"] == 500 and got["lr"] == 1.0 and isinstance(got["lr"], float)


@pytest.mark.parametrize("values, match", [
    ({"n": 0}, r"parameter 'n': 0 is out of range, expected int in \[1, 1000\]"),
    ({"n": "ten"}, r"parameter 'n': got 'ten' \(str\), expected int"),
    ({"n": 2.5}, r"parameter 'n'"),
    ({"flag": 1}, r"parameter 'flag'"),
    ({"n": True}, r"parameter 'n'"),
    ({"mode": "ftp"}, r"parameter 'mode': got 'ftp', expected one of 'local', 'hub'"),
    ({"ks": [5, 0]}, r"parameter 'ks'"),
    ({"ks": []}, r"parameter 'ks'"),
    ({"profile": "huge"}, r"parameter 'profile': got 'huge', expected one of smoke, default, paper"),
    ({"bogus": 3}, r"unknown parameter 'bogus': allowed are profile, n, lr, mode, ks, flag"),
])
def test_bad_values_give_one_line_errors(values, match) -> None:
    with pytest.raises(ParameterError, match=match) as err:
        resolve(ns(**values), SPEC)
    assert "\n" not in str(err.value)


def test_modules_functions_and_private_names_are_not_parameters() -> None:
    import math

    assert resolve(ns(math=math, helper=lambda: 0, _hidden=1, Param=Param), SPEC)["n"] == 100
