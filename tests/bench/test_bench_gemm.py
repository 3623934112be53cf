"""`gemmpad bench gemm`: correctness gate, timings, JSON, precisions. Tiny sizes so CI stays fast."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gemmpad
from gemmpad.runtime.precision import format_of

from gemmpad.runtime import registry
from gemmpad.bench import gemm
from tests.cli_helpers import run_cli


def test_bench_gemm_cpu(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "5x100x784", "--kernels", "cpu.01_naive",
                 "--reps", "5", "--budget-s", "0.05", "--out", str(tmp_path))
    assert rc == 0
    assert out.startswith("GEMM benchmark: 1 kernel, sizes 17x13x29, 5x100x784; ")  # not "1 kernels"
    assert "| cpu.01_naive | fp32 | 17x13x29 |" in out
    data = json.loads((tmp_path / "bench-gemm.json").read_text())
    assert data["machine"]["versions"]["gemmpad"]
    rows = data["results"]
    assert [(r["M"], r["N"], r["K"]) for r in rows] == [(17, 13, 29), (5, 100, 784)]
    for r in rows:
        assert r["correct"] and r["rel_error"] <= 1e-5
        assert r["ms"] > 0 and r["gflops"] > 0 and r["reference"] == "NumPy" and r["reference_ms"] > 0
    assert (tmp_path / "bench-gemm.png").stat().st_size > 0


def test_bench_gemm_bad_size(monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:  # the parser's one-line error
        run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "12x12", "--kernels", "cpu.01_naive")
    assert stop.value.code == 2
    assert "argument --sizes: '12x12' is not MxNxK" in capsys.readouterr().err


def test_bench_gemm_wrong_kernel_is_not_timed(monkeypatch, capsys, tmp_path):
    """The correctness gate: a kernel that returns zeros is reported wrong, never timed, exit 1."""
    def zeros(a, b, *, kernel=None, out=None, **kw):
        out = np.empty((a.shape[0], b.shape[1]), np.float32) if out is None else out
        out[:] = 0.0
        return out

    monkeypatch.setattr(gemmpad, "gemm", zeros)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "--kernels", "cpu.02_blocked_simd",
                           "--out", str(tmp_path))
    assert rc == 1 and "WRONG" in out and "| wrong |" in out
    (row,) = json.loads((tmp_path / "bench-gemm.json").read_text())["results"]
    assert row["correct"] is False and "ms" not in row
    assert not (tmp_path / "bench-gemm.png").exists() and "nothing timed" in out  # no chart of nothing


def test_bench_gemm_that_would_time_nothing_says_why_and_writes_nothing(monkeypatch, capsys, tmp_path):
    """CPU rungs are held back above CPU_MAX_MNK unless named in full: a run holding back every
    kernel printed an empty table, wrote an empty bench-gemm.json and exited 0; now one line that
    says how to run them, exit 2, no file and no folder. Another size still runs, the rest said."""
    res = tmp_path / "res"
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "2000x2000x2000", "--kernels", "cpu",
                           "--out", str(res))
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("gemmpad: error: nothing to time: cpu.01_naive") and "not run at 2000x2000x2000" in err
    assert "named in full in --kernels (e.g. --kernels cpu.01_naive)" in err and not res.exists()
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "2000x2000x2000", "8x8x8", "--kernels",
                           "cpu.01", "--reps", "3", "--budget-s", "0.01", "--out", str(res))
    assert rc == 0 and "  cpu.01_naive not run at 2000x2000x2000: " in out
    assert [r["M"] for r in json.loads((res / "bench-gemm.json").read_text())["results"]] == [8]


def test_bench_gemm_where_every_rung_refuses_every_shape_writes_nothing(monkeypatch, capsys, tmp_path):
    """A rung refuses a shape outside its step (KernelUnavailable): when all did, an empty table,
    file and exit 0 said nothing; now one line with each refusal, exit 2, nothing written."""
    def refuse(name, m, n, k, rng):
        raise gemmpad.errors.KernelUnavailable(f"{name} takes only K % 16 == 0, got {k}")

    monkeypatch.setattr(gemm, "check", refuse)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "--kernels", "cpu.01_naive",
                           "--out", str(tmp_path / "res"))
    assert rc == 2 and err.count("\n") == 1 and "|" not in out, err
    assert err == "gemmpad: error: nothing timed: cpu.01_naive 17x13x29: cpu.01_naive takes only K % 16 == 0, got 29\n"
    assert not (tmp_path / "res").exists()


@pytest.mark.gpu
def test_bench_gemm_gpu(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "127x97x131", "--kernels", "cuda.01_naive", "--reps", "5",
                 "--out", str(tmp_path))
    assert rc == 0
    (row,) = json.loads((tmp_path / "bench-gemm.json").read_text())["results"]
    assert row["correct"] and row["gflops"] > 0


def test_the_reference_is_timed_beside_each_gpu_kernel(monkeypatch, capsys, tmp_path):
    """Kernel and cuBLAS series alternate for every GPU kernel (no reference timed once per precision
    and reused), and each row's ratio is to the reference timed beside it. No GPU: the module, the
    reference and the kernels are stand-ins that log their calls."""
    calls: list[str] = []
    ref_ms = iter([3.0, 2.0, 4.0, 6.0, 5.0, 7.0])  # three series per kernel; lowest median taken

    class FakeCuda:
        @staticmethod
        def bench_gemm(name, m, n, k, reps, warmup):
            calls.append(name)
            return [1.0] * reps

    def fake_ref(self, m, n, k, prec, reps):
        calls.append("ref")
        return [next(ref_ms)] * reps

    specs = [registry.KernelSpec(f"cuda.9{i}_fake", "cuda", "fp16", "stand-in", "none") for i in (1, 2)]
    monkeypatch.setattr(registry, "kernels", lambda device=None, kind=None: specs)
    monkeypatch.setattr(gemm.native, "cuda", lambda: FakeCuda)
    monkeypatch.setattr(gemm.CublasRef, "__init__", lambda self: setattr(self, "backend", "fake") or
                        setattr(self, "output", {}) or setattr(self, "mode", {}))
    monkeypatch.setattr(gemm.CublasRef, "time_ms", fake_ref)
    monkeypatch.setattr(gemmpad, "gemm", lambda a, b, *, kernel, out: np.matmul(a, b, out=out))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "8x8x8", "--reps", "3",
                           "--out", str(tmp_path))
    assert rc == 0, err
    collapsed = [c for i, c in enumerate(calls) if i == 0 or c != calls[i - 1]]  # a series: probe + timed reps
    assert collapsed == ["cuda.91_fake", "ref"] * 3 + ["cuda.92_fake", "ref"] * 3
    rows = json.loads((tmp_path / "bench-gemm.json").read_text())["results"]
    assert [r["reference_ms"] for r in rows] == [2.0, 5.0]
    assert [round(r["percent_of_reference"]) for r in rows] == [200, 500]


def test_reference_reps_are_queued_before_the_host_waits():
    """The reference's reps go to the GPU QUEUED_REPS at a time and the host waits once per batch
    (a wait per rep let Python's launch of the next one into its time), each rep flushed first."""
    log: list[str] = []

    class Event:
        count = 0

        def __init__(self) -> None:
            Event.count += 1
            self.id = Event.count

        def record(self) -> None:
            log.append("record")

        def synchronize(self) -> None:
            log.append("wait")

    times = gemm.queued(gemm.QUEUED_REPS + 3, lambda: log.append("flush"), lambda: log.append("mm"), Event,
                        lambda start, stop: float(stop.id - start.id))
    assert times == [1.0] * (gemm.QUEUED_REPS + 3)
    assert log.count("wait") == 2 and log[-1] == "wait"
    assert log[:4] == ["flush", "record", "mm", "record"]
    assert log.index("wait") == 4 * gemm.QUEUED_REPS  # the first batch whole before the first wait
    assert gemm.queued(0, list, list, Event, lambda a, b: 0.0) == []

    # With a hold: the GPU waits before each batch, as long as the host needs to enqueue it.
    log.clear()
    gemm.queued(gemm.QUEUED_REPS + 3, lambda: log.append("flush"), lambda: log.append("mm"), Event,
                lambda start, stop: 1.0, hold=lambda n: log.append(f"hold {n}"))
    assert [e for e in log if e.startswith("hold")] == [f"hold {gemm.QUEUED_REPS}", "hold 3"]
    assert log[0] == f"hold {gemm.QUEUED_REPS}" and log[log.index("wait") + 1] == "hold 3"


def test_every_registered_precision_has_a_reference_and_an_error_bound():
    """A kernel of a new precision gets its cuBLAS row from PRECISIONS and its check from
    gemmpad.runtime.precision.FORMATS alone: a missing entry is caught here."""
    for spec in registry.kernels(kind="gemm"):
        p = gemm.precision(spec.precision)
        assert 0 < format_of(spec.precision).unit_roundoff < 0.1 and p.dtype in ("float32", "float16", "bfloat16", "float8_e4m3fn")


def test_reference_label_names_a_C_narrower_than_ours():
    """cuBLAS writes float32 C as our kernels do where torch allows it; a row says when it did not."""
    ref = gemm.CublasRef()
    ref.output["float16"] = "float32"
    assert ref.name("fp16") == "cuBLAS fp16"
    ref.output["float16"] = "float16"  # a torch without mm's out_dtype, or cupy
    assert ref.name("fp16") == "cuBLAS fp16 (float16 C)"


def test_unknown_precision_is_a_clear_error():
    with pytest.raises(gemmpad.errors.GemmpadError, match="fp4.*PRECISIONS"):
        gemm.precision("fp4")


def test_default_sizes_are_the_mlp_layers_and_the_large_squares():
    sizes = [gemm.parse_size(s) for s in gemm.DEFAULT_SIZES]
    assert {(256, 100, 784), (4096, 100, 784), (4096, 100, 100)} <= set(sizes)
    assert {(4096, 4096, 4096), (8192, 8192, 8192)} <= set(sizes)


def test_bench_gemm_rewrites_the_readme_block(monkeypatch, capsys, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\n<!-- bench:gemm begin -->\nold table\n<!-- bench:gemm end -->\n\nafter\n")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "--kernels", "cpu.01_naive",
                           "--reps", "3", "--budget-s", "0.01", "--out", str(tmp_path / "res"), "--readme", str(readme))
    assert rc == 0, err
    text = readme.read_text()
    assert text.startswith("# title\n\n<!-- bench:gemm begin -->\n") and text.endswith("<!-- bench:gemm end -->\n\nafter\n")
    assert "old table" not in text and "| `cpu.01_naive` | fp32 |" in text and "(res/bench-gemm.json)" in text


def test_bench_gemm_replaces_its_results_only_with_force(monkeypatch, capsys, tmp_path):
    """Run twice into one folder: the second is refused, naming both files, until --force. --readme
    names the file to edit and needs no --force, but the roofline it draws into --out does."""
    res = tmp_path / "res"

    def bench(*extra: str) -> tuple[int, str, str]:
        return run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "8x8x8", "--kernels", "cpu.01_naive",
                       "--reps", "3", "--budget-s", "0.01", "--out", str(res), *extra)

    assert bench()[0] == 0
    (res / "bench-gemm.json").write_text("{}")
    rc, out, err = bench()
    assert (rc, out) == (2, "") and (res / "bench-gemm.json").read_text() == "{}"
    json_png = f"{res / 'bench-gemm.json'}, {res / 'bench-gemm.png'}"
    assert err == f"gemmpad: error: --out: {json_png} already exist; pass --force to replace them\n"
    rc, out, err = bench("--force")
    assert rc == 0 and json.loads((res / "bench-gemm.json").read_text())["results"][0]["kernel"] == "cpu.01_naive"

    readme = tmp_path / "README.md"
    readme.write_text("<!-- bench:gemm begin -->\nold\n<!-- bench:gemm end -->\n")
    res = tmp_path / "drawn"
    res.mkdir()
    (res / "roofline.png").write_bytes(b"an earlier roofline")
    rc, out, err = bench("--readme", str(readme))
    assert rc == 2 and err == f"gemmpad: error: --out: {res / 'roofline.png'} already exists; pass --force to replace it\n"
    assert "old" in readme.read_text()
    assert bench()[0] == 0 and (res / "roofline.png").read_bytes() == b"an earlier roofline"  # not drawn: not refused


def test_a_result_file_made_during_the_run_is_not_replaced(monkeypatch, capsys, tmp_path):
    """--out is checked before the run; a bench-gemm.json made there while it ran (another run into the
    same folder) was replaced at its end. Now it stays, in the same one line, and this run's results
    are kept in the file the line names."""
    def check_and_meanwhile(*args, **kwargs):
        if not (tmp_path / "bench-gemm.json").exists():
            (tmp_path / "bench-gemm.json").write_text("another run's")
        return check(*args, **kwargs)

    check = gemm.check
    monkeypatch.setattr(gemm, "check", check_and_meanwhile)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "8x8x8", "--kernels", "cpu.01_naive",
                           "--reps", "3", "--budget-s", "0.01", "--out", str(tmp_path))
    assert rc == 2 and (tmp_path / "bench-gemm.json").read_text() == "another run's"
    kept = [p for p in tmp_path.iterdir() if p.name != "bench-gemm.json"]
    assert len(kept) == 1 and json.loads(kept[0].read_text())["results"][0]["kernel"] == "cpu.01_naive"
    assert err == (f"gemmpad: error: --out: {tmp_path / 'bench-gemm.json'} already exists; pass --force to replace "
                   f"it (it appeared during the run: this run's bench-gemm.json is kept as {kept[0]})\n")


def test_bench_gemm_readme_without_markers_fails_before_the_run(monkeypatch, capsys, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "--kernels", "cpu.01_naive",
                           "--out", str(tmp_path / "res"), "--readme", str(readme))
    assert rc == 2 and out == "" and "<!-- bench:gemm begin -->" in err
    assert readme.read_text() == "no markers\n" and not (tmp_path / "res").exists()
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--kernels", "cpu.01_naive", "--readme", str(readme))
    assert rc == 2 and "--readme needs --out" in err


def test_bench_gemm_huge_size_is_a_clear_error(monkeypatch, capsys):
    """Issue 20, finding 8: 99999999999999999999x1x1 was an internal error (exit 3)."""
    for size in ("99999999999999999999x1x1", "46341x46341x1"):
        with pytest.raises(SystemExit) as stop:
            run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", size, "--kernels", "cpu.01_naive")
        assert stop.value.code == 2
        assert f"argument --sizes: '{size}': a matrix of over 2,147,483,647 elements" in capsys.readouterr().err


def test_reference_operands_are_drawn_as_ours():
    """cuBLAS multiplies operands uniform over [-1, 1), as bench_gemm's own: on [0, 1) (torch.rand's
    range) the tensor cores draw less power and cuBLAS ran 3 % faster at 4096^3 bf16 on an H100."""
    draws: list[np.ndarray] = []

    class Tensor:
        def __init__(self, values: np.ndarray) -> None:
            self.values = values

        def __mul__(self, x: float) -> "Tensor":
            return Tensor(self.values * x)

        def __add__(self, x: float) -> "Tensor":
            return Tensor(self.values + x)

        def to(self, dtype: str) -> "Tensor":
            draws.append(self.values)
            return self

    class Torch:
        @staticmethod
        def rand(rows: int, cols: int, device: str) -> Tensor:
            return Tensor(np.random.default_rng(0).random((rows, cols)))

    ref = gemm.CublasRef.__new__(gemm.CublasRef)
    ref.torch = Torch
    ref._uniform(300, 200, "bfloat16")
    (values,) = draws
    assert values.shape == (300, 200)
    assert (values >= -1).all() and (values < 1).all()
    assert (values < -0.9).any() and (values > 0.9).any() and abs(values.mean()) < 0.01


@pytest.mark.parametrize("has_fast_accum", [True, False])
def test_the_fp8_reference_runs_cublaslt_in_its_fastest_mode_and_says_so(has_fast_accum: bool) -> None:
    """Issue 44 compares fp8 with cuBLASLt "in its fastest mode, and say which": fast accumulation
    where torch._scaled_mm takes it (our fp8 kernels sum in the tensor cores' accumulator too), the
    plain mode only where it does not, and the row's name says which ran."""
    calls: list[dict] = []

    class Tensor:
        def t(self) -> "Tensor":
            return self

    class Torch:
        float32 = "float32"

        @staticmethod
        def ones(*shape, device: str) -> Tensor:
            return Tensor()

        @staticmethod
        def empty(*shape, device: str, dtype: str) -> Tensor:
            return Tensor()

        @staticmethod
        def _scaled_mm(a, b, *, scale_a, scale_b, out_dtype, out, **kw) -> None:
            if kw and not has_fast_accum:
                raise TypeError("_scaled_mm() got an unexpected keyword argument 'use_fast_accum'")
            calls.append(kw)

    ref = gemm.CublasRef.__new__(gemm.CublasRef)
    ref.torch, ref.output, ref.mode = Torch, {}, {}
    ref._uniform = lambda rows, cols, dtype: Tensor()
    product = ref._fp8(256, 128, 64, "torch.float8_e4m3fn")
    product()
    assert calls[-1] == ({"use_fast_accum": True} if has_fast_accum else {})
    assert ref.name("fp8") == ("cuBLAS fp8 (fast accumulation)" if has_fast_accum else "cuBLAS fp8")
    assert ref._fp8(256, 100, 64, "torch.float8_e4m3fn") is None  # N % 16: cuBLASLt fp8 cannot


@pytest.mark.gpu
def test_cupy_reference_holds_its_queue(monkeypatch):
    """Where torch has no CUDA, cupy times cuBLAS; its hold is a spin kernel (cupy has no
    torch.cuda._sleep), which keeps the GPU at least the cycles asked for: n reps' worth cannot
    pass in less than n * HOLD_CYCLES_PER_REP cycles of the fastest clock an H100 or H200 runs."""
    cupy = pytest.importorskip("cupy")
    holds = []
    timed = gemm.queued
    monkeypatch.setattr(gemm, "queued", lambda *args, **kw: holds.append(args[5]) or timed(*args, **kw))
    ref = gemm.CublasRef.__new__(gemm.CublasRef)
    ref.backend, ref.cupy, ref.output, ref.mode = f"cupy {cupy.__version__} (cuBLAS)", cupy, {}, {}
    times = ref.time_ms(64, 48, 80, gemm.precision("fp16"), 5)
    assert len(times) == 5 and all(t > 0 for t in times)
    (hold,) = holds
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    hold(10)
    stop.record()
    stop.synchronize()
    assert cupy.cuda.get_elapsed_time(start, stop) >= 10 * gemm.HOLD_CYCLES_PER_REP / 1.98e9 * 1e3


def test_numpy_reference_runs_without_the_images_blas_pins(monkeypatch):
    """OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, read when OpenBLAS loads, slowed the reference the CPU
    rungs were measured against (1311 % of NumPy): it runs in a process without them, and says which
    BLAS, kernel and thread count it ran."""
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "262144")
    ms, libs = gemm.numpy_reference(64, 32, 48, 0.01)
    assert ms > 0 and libs
    for lib in libs:
        assert lib["env"] == {} and lib["num_threads"] >= 1 and lib["internal_api"] and lib["architecture"]
