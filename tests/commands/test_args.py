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

    with pytest.raises(SystemExit) as stop:  # the parser's one-line error, as for any bad option value
        cli.main([*command, "--output", ""])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert len(err.splitlines()) == 1 and "argument --output" in err and "Traceback" not in err
    assert f"an empty path names no file (see gemmpad {command[0]} --help)" in err


@pytest.mark.parametrize(
    ("argv", "prog", "message"),
    [
        (["bench", "gemm", "--reps", "0"], "gemmpad bench gemm",
         "argument --reps: must be between 1 and 100,000,000, got 0"),
        (["bench", "gemm", "--bogus"], "gemmpad bench gemm", "unrecognized arguments: --bogus"),
        (["bench"], "gemmpad bench", "the following arguments are required: WHAT"),
        (["bench", "nope"], "gemmpad bench", "argument WHAT: invalid choice: 'nope' (choose from 'gemm', 'mlp', "
                                             "'train', 'learn', 'latency', 'report')"),
        (["predict", "x.png", "--model"], "gemmpad predict", "argument --model: expected one argument"),
        (["predict", "x.png", "--backend", "gpu"], "gemmpad predict",
         "argument --backend: invalid choice: 'gpu' (choose from 'numpy', 'cpu', 'cuda')"),
        (["predict"], "gemmpad predict", "the following arguments are required: PATH"),
        (["eval", "--bogus", "-x"], "gemmpad eval", "unrecognized arguments: --bogus -x"),
        (["train", "--epochs", "0"], "gemmpad train", "argument --epochs: must be between 1 and 10,000, got 0"),
        (["data", "fetch", "zzz"], "gemmpad data fetch",
         "argument SET: invalid choice: 'zzz' (choose from 'mnist', 'pendigits', 'all')"),
        (["export"], "gemmpad export", "the following arguments are required: --onnx"),
        (["--bogus"], "gemmpad app", "unrecognized arguments: --bogus"),  # options alone open the window
        (["app", "--batch", "0"], "gemmpad app", "argument --batch: must be between 1 and 4,096, got 0"),  # no display
        (["frobnicate"], "gemmpad", "argument COMMAND: invalid choice: 'frobnicate' (choose from 'app', 'predict', "
                                    "'info', 'train', 'fine-tune', 'learn', 'eval', 'unsure', 'bench', 'data', "
                                    "'import', 'export')"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_command_and_its_help(argv: list[str], prog: str, message: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """argparse printed its usage block and then the error, two lines or more, and a subcommand's
    unknown option was reported by the top parser as `gemmpad: error: ...`. Every parser's error is now
    one line: the command as typed, argparse's message, and where that command's help is; exit 2."""
    from gemmpad.commands import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == ""
    assert captured.err == f"{prog}: error: {message} (see {prog} --help)\n"


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["export", "--onnx", "nodir/x.onnx"], "--onnx"),
        (["fine-tune", "--drawings", ".", "--output", "nodir/sub/x.npz"], "--output"),
        (["train", "--output", "nodir/x.npz"], "--output"),
        (["train", "--curve", "nodir/curve.png"], "--curve"),
        (["unsure", "--fit", "--output", "nodir/x.unsure.json"], "--output"),
        (["import", "net.pt", "--output", "nodir/x.npz"], "--output/-o"),
        (["app", "--record", "nodir/strokes.json"], "--record"),
        (["app", "--screenshot", "nodir/shot.png"], "--screenshot"),
    ],
)
def test_an_output_file_in_a_missing_folder_is_refused(argv: list[str], option: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Commands made the missing folders of an output file they were given (`export --onnx nodir/x.onnx`
    wrote nodir/x.onnx): a typo in a folder's name became a new tree the user never asked for. Every
    output file option now needs its folder to exist, as cp and gcc -o do: one line naming the folder,
    at parse time, so before any work; nothing is made."""
    from gemmpad.commands import cli

    monkeypatch.chdir(tmp_path)
    path = argv[argv.index(option.split("/")[0]) + 1]
    with pytest.raises(SystemExit) as stop:
        cli.build_parser(argv[0]).parse_args(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == (f"gemmpad {argv[0]}: error: argument {option}: {path}: folder "
                                       f"{path.rsplit('/', 1)[0]} does not exist; create it first "
                                       f"(see gemmpad {argv[0]} --help)\n")
    assert list(tmp_path.iterdir()) == []


def test_an_output_file_may_be_in_the_current_folder_or_one_that_exists(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare name is in the current folder; a folder that is a file, or cannot be read, is left to the
    command's own check (gemmpad.inputs.files.check_output_file), which says what is there."""
    from gemmpad.commands.args import output_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "plain").write_text("")
    for name in ("x.npz", "sub/x.npz", str(tmp_path / "sub" / "x.npz"), "plain/x.npz"):
        assert output_path(name) == name
