"""Option types: a bad number is refused by argparse with the option's name, before any work."""

from __future__ import annotations

import argparse

import pytest

from gemmpad.args import integer, number


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="t", exit_on_error=False)
    p.add_argument("--n", type=integer(1))
    p.add_argument("--k", type=integer(0))
    p.add_argument("--lr", type=number(0, above=True))
    p.add_argument("--px", type=number(6, 40))
    return p


def test_good_values() -> None:
    a = parser().parse_args(["--n", "1", "--k", "0", "--lr", "1e-3", "--px", "40"])
    assert (a.n, a.k, a.lr, a.px) == (1, 0, 1e-3, 40.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n", "0"], "must be at least 1, got 0"),
        (["--k", "-5"], "must be at least 0, got -5"),
        (["--n", "2.5"], "'2.5' is not a whole number"),
        (["--lr", "0"], "finite number above 0"),
        (["--lr", "nan"], "finite number above 0, got nan"),
        (["--lr", "inf"], "finite number above 0"),
        (["--px", "5.9"], "at least 6 and at most 40"),
        (["--px", "40.5"], "at least 6 and at most 40"),
        (["--px", "wide"], "'wide' is not a number"),
    ],
)
def test_bad_values_name_the_option(argv: list[str], message: str) -> None:
    with pytest.raises(argparse.ArgumentError, match=message) as info:
        parser().parse_args(argv)
    assert info.value.argument_name == argv[0]
