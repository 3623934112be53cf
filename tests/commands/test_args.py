"""Option types: a bad number is refused by argparse with the option's name, before any work."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gemmpad.commands.args import integer, number


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="t", exit_on_error=False)
    p.add_argument("--n", type=integer(1, 100))
    p.add_argument("--k", type=integer(0, 10**6))
    p.add_argument("--lr", type=number(0, above=True))
    p.add_argument("--px", type=number(6, 40))
    return p


def test_good_values() -> None:
    a = parser().parse_args(["--n", "1", "--k", "0", "--lr", "1e-3", "--px", "40"])
    assert (a.n, a.k, a.lr, a.px) == (1, 0, 1e-3, 40.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n", "0"], "must be between 1 and 100, got 0"),
        (["--n", "101"], "must be between 1 and 100, got 101"),
        (["--k", "-5"], "must be between 0 and 1,000,000, got -5"),
        (["--k", "1" * 5000], "is not a whole number"),  # past int()'s 4300 digits: still the option's error
        (["--n", "2.5"], "'2.5' is not a whole number"),
        (["--lr", "0"], "finite number above 0"),
        (["--lr", "nan"], "finite number above 0, got 'nan'"),
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


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--epochs", "1000000000"],
        ["train", "--eval-drawn", "1000000000"],
        ["train", "--drawn", "1000000000"],
        ["train", "--seed", "-1"],
        ["train", "--seed", "18446744073709551616"],
        ["train", "--batch-size", "1000000000"],
        ["bench", "mlp", "--batches", "1000000000"],
        ["bench", "mlp", "--soak", "10000000000000"],
        ["bench", "gemm", "--reps", "10000000000000"],
    ],
)
def test_every_count_is_bounded_before_any_work(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20, findings 8 and 9: a billion epochs or a negative seed is the option's error
    at parse time, not an out-of-memory after minutes or an internal error."""
    from gemmpad.commands import cli

    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(argv)
    assert info.value.code == 2
    assert f"argument {argv[-2]}" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["fine-tune", "--drawings", "."], ["train"], ["unsure", "--fit"], ["import", "x.pt"]])
def test_an_empty_output_path_is_refused_not_taken_for_the_default(command: list[str], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Path("") is "." and `if args.output` read `--output ''` as the option left out: fine-tune wrote
    the personal model. (Run in an empty folder: without the check a command would start its work.)"""
    from gemmpad.commands import cli

    monkeypatch.chdir(tmp_path)

    with pytest.raises(SystemExit) as stop:  # argparse's usage error, as for any bad option value
        cli.main([*command, "--output", ""])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.strip().endswith("an empty path names no file") and "argument --output" in err and "Traceback" not in err
