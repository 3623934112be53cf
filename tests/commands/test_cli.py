"""The CLI wiring: errors become one readable line and an exit status, never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gemmpad.commands import cli
from gemmpad.errors import GemmpadError


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert re.search(rf"^\s+{name}\s", out, re.M), name


def test_learn_is_fine_tune_by_the_windows_name(monkeypatch):
    """`gemmpad learn` (what the window's L button is called) runs `gemmpad fine-tune`, with its options."""
    seen = []
    monkeypatch.setattr("gemmpad.learn.personal.run", lambda args: seen.append(args) or 0)
    assert cli.main(["learn", "--drawings", "somewhere"]) == 0 and cli.main(["fine-tune", "--drawings", "x"]) == 0
    assert [a._module for a in seen] == ["gemmpad.learn.personal"] * 2 and seen[0].drawings == "somewhere"


def test_version(capsys):
    from gemmpad import __version__

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"gemmpad {__version__}"


def test_bare_gemmpad_and_leading_options_open_the_app(monkeypatch):
    seen = []
    monkeypatch.setattr("gemmpad.ui.app.run", lambda args: seen.append(args) or 0)
    assert cli.main([]) == 0 and cli.main(["--batch", "4"]) == 0
    assert [a.command for a in seen] == ["app", "app"] and seen[1].batch == 4


def test_interrupt_exits_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("gemmpad.commands.info.run", interrupted)
    assert cli.main(["info"]) == 130 and "interrupted" in capsys.readouterr().err


def test_closed_pipe_and_exhausted_memory_are_not_bugs(monkeypatch, capsys):
    def reader_gone(args):
        raise BrokenPipeError

    monkeypatch.setattr("gemmpad.commands.info.run", reader_gone)
    assert cli.main(["info"]) == 141 and capsys.readouterr().err == ""  # `gemmpad ... | head`: silent

    def too_big(args):
        raise MemoryError("Unable to allocate 149. GiB")

    monkeypatch.setattr("gemmpad.commands.info.run", too_big)
    assert cli.main(["info"]) == 2
    assert capsys.readouterr().err.strip() == "gemmpad: error: out of memory: Unable to allocate 149. GiB"


def test_building_the_parser_loads_no_heavy_module():
    """`gemmpad info` and `predict` build the parser, which imports every command module:
    torch, the window toolkit and matplotlib must stay unloaded until a command needs them."""
    code = ("import sys; from gemmpad.commands import cli; cli.build_parser(); "
            "print(','.join(m for m in ('torch', 'dearpygui', 'matplotlib') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "", f"loaded: {proc.stdout.strip()}"


def test_help_imports_only_the_command_line():
    """`python -m gemmpad --help` lists the subcommands without importing their modules: no torch,
    PIL or window toolkit, and nothing of learn/, data/, inputs/, ui/ or bench/ (issue 41).
    -X importtime names every module the process imports."""
    import gemmpad

    env = {**os.environ, "PYTHONPATH": str(Path(gemmpad.__file__).resolve().parents[1])}  # the gemmpad under test
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gemmpad", "--help"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "train" in proc.stdout, proc.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "gemmpad.commands.cli" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in ("torch", "PIL", "dearpygui", "matplotlib", "onnx")
                   or m.startswith(("gemmpad.learn", "gemmpad.data", "gemmpad.inputs", "gemmpad.ui", "gemmpad.bench",
                                    "gemmpad.commands.")) and m not in ("gemmpad.commands.cli",))
    assert not heavy, f"`gemmpad --help` imported {heavy}"


def test_user_error_is_one_line_exit_2(monkeypatch, capsys):
    def boom(args):
        raise GemmpadError("the model file is corrupt")

    monkeypatch.setattr("gemmpad.commands.info.run", boom)
    assert cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gemmpad: error: the model file is corrupt"


def test_bug_is_one_line_unless_debugging(monkeypatch, capsys):
    def bug(args):
        raise KeyError("oops")

    monkeypatch.setattr("gemmpad.commands.info.run", bug)
    monkeypatch.delenv("GEMMPAD_DEBUG", raising=False)
    assert cli.main(["info"]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "Traceback" not in err
    monkeypatch.setenv("GEMMPAD_DEBUG", "1")
    with pytest.raises(KeyError):
        cli.main(["info"])



@pytest.mark.parametrize(("sizes", "message"), [
    (["-1x5x5"], "'-1x5x5': every dimension must be >= 1"),
    (["5x5x5", "-0x5x5"], "'-0x5x5': every dimension must be >= 1"),
    (["-1x5"], "'-1x5' is not MxNxK (e.g. 1024x1024x768)"),
])
def test_a_size_with_a_minus_is_the_sizes_one_line_error(monkeypatch, capsys, sizes, message):
    """`bench gemm --sizes -1x5x5` was argparse's usage and "expected at least one argument" (a word
    of a minus and a digit read as an unknown option), the bad size unnamed."""
    from tests.cli_helpers import run_cli

    with pytest.raises(SystemExit) as stop:
        run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", *sizes)
    assert stop.value.code == 2
    assert capsys.readouterr() == ("", f"gemmpad bench gemm: error: argument --sizes: {message} "
                                       "(see gemmpad bench gemm --help)\n")


def test_bench_gemm_checks_what_was_typed_before_any_file(monkeypatch, capsys, tmp_path):
    """A wrong --sizes was found last, after --readme's file was read, --out's folder tried and its
    results refused, and --kernels matched: the user fixed those, ran again, and only then heard of
    the size. Now a size is checked as it is parsed, and --kernels before any file is looked at."""
    from tests.cli_helpers import run_cli

    res = tmp_path / "res"
    res.mkdir()
    (res / "bench-gemm.json").write_text("{}")  # an earlier run's: refused without --force
    readme = tmp_path / "README.md"
    readme.write_text("# no bench block here\n")
    files = ["--out", str(res), "--readme", str(readme)]
    with pytest.raises(SystemExit) as stop:
        run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "12x12", "--kernels", "nope", *files)
    assert stop.value.code == 2
    assert capsys.readouterr() == ("", "gemmpad bench gemm: error: argument --sizes: '12x12' is not MxNxK "
                                       "(e.g. 1024x1024x768) (see gemmpad bench gemm --help)\n")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "12x12x12", "--kernels", "nope", *files)
    assert (rc, out) == (2, "") and err.startswith("gemmpad: error: --kernels nope: matches no kernel; known: ")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["README.md", "bench-gemm.json", "res"]


def test_a_value_with_a_minus_reaches_its_options_check(capsys):
    """The same rule for every option: `--budget-s -1e-3` is the option's own "must be above 0",
    not "expected one argument"."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "gemm", "--budget-s", "-1e-3"])
    assert exc.value.code == 2
    assert "argument --budget-s: must be a finite number above 0, got '-1e-3'" in capsys.readouterr().err

def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2


@pytest.mark.parametrize(
    ("argv", "module", "install"),
    [(["app"], "dearpygui", "pip install dearpygui"), (["predict", "x.png"], "PIL", "pip install pillow"),
     (["train"], "torch", "pip install 'gemmpad[train]'")],
)
def test_missing_package_is_named_with_its_install(monkeypatch, capsys, argv, module, install):
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError, as when not installed
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"needs {module}" in err and install in err and "internal error" not in err


def test_messages_quoting_what_was_typed_are_printable(monkeypatch, capsys):
    """Issue 20, finding 10: an error line quotes file names and arguments as given;
    a newline or an escape sequence in them must not reach the terminal as such."""
    def named(args):
        raise GemmpadError("model file not found: /tmp/\x1b[2Jm\nx.npz")

    monkeypatch.setattr("gemmpad.commands.info.run", named)
    assert cli.main(["info"]) == 2
    assert capsys.readouterr().err == "gemmpad: error: model file not found: /tmp/\\x1b[2Jm\\x0ax.npz\n"
    with pytest.raises(SystemExit):
        cli.main(["info", "\x1b[31mred"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: \\x1b[31mred" in err and "\x1b" not in err
