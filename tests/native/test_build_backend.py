"""The build backend's decision: installed toolkit, NVIDIA's compiler wheels, or CPU only.

Every probe of the machine is faked, so these run anywhere and download nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "native" / "build_backend"))

from gemmpad_cuda_plan import (  # noqa: E402  (the backend lives outside the package)
    CUDA_WHEELS,
    BuildConfigError,
    Plan,
    Probes,
    cmake_settings,
    plan,
    wheel_toolkit,
)

NO_DRIVER = None
H200 = (13000, ["9.0"])


def probes(env: dict[str, str] | None = None, path_nvcc: str | None = None,
           files: tuple[str, ...] = (), driver=NO_DRIVER) -> Probes:
    """A fake machine: nvcc on PATH or not, these files present, this driver (or none)."""
    return Probes(
        env=env or {},
        which=lambda name: path_nvcc if name == "nvcc" else None,
        is_file=lambda p: p in files,
        driver=lambda: driver,
    )


def test_toolkit_on_path_is_used_as_today():
    p = plan(probes(path_nvcc="/usr/local/bin/nvcc"))
    assert p.mode == "toolkit" and p.requires == [] and p.nvcc is None  # CMake finds it itself
    assert p.archs is None  # no GPU seen: CMake's five targets, as CI builds today


def test_toolkit_off_path_is_handed_to_cmake():
    p = plan(probes(env={"CUDA_HOME": "/opt/cuda"}, files=("/opt/cuda/bin/nvcc",)))
    assert p.mode == "toolkit" and p.nvcc == "/opt/cuda/bin/nvcc"
    assert cmake_settings(p, {}, None)["cmake.define.CMAKE_CUDA_COMPILER"] == "/opt/cuda/bin/nvcc"
    assert plan(probes(files=("/usr/local/cuda/bin/nvcc",))).nvcc == "/usr/local/cuda/bin/nvcc"


def test_no_toolkit_no_driver_builds_cpu_only():
    p = plan(probes())
    assert p.mode == "cpu" and p.requires == [] and "GEMMPAD_CUDA=1" in p.reason
    assert cmake_settings(p, {}, None) == {"cmake.define.GEMMPAD_WITH_CUDA": "OFF"}


def test_driver_without_toolkit_gets_the_compiler_wheels_for_its_gpu():
    p = plan(probes(driver=H200))
    assert p.mode == "wheels" and p.requires == list(CUDA_WHEELS)
    assert p.archs == "90a-real"  # Hopper alone, with the wgmma/TMA target


def test_driver_seen_only_through_proc_or_nvidia_smi_still_counts():
    p = plan(probes(driver=(None, [])))
    assert p.mode == "wheels" and p.archs is None


def test_old_driver_says_why_and_builds_cpu_only():
    p = plan(probes(driver=(12040, ["8.9"])))
    assert p.mode == "cpu" and "CUDA 12.4" in p.reason and "13.0" in p.reason


def test_gemmpad_cuda_0_wins_over_a_toolkit():
    p = plan(probes(env={"GEMMPAD_CUDA": "0"}, path_nvcc="/usr/bin/nvcc", driver=H200))
    assert p.mode == "cpu"
    assert cmake_settings(p, {}, None)["cmake.define.GEMMPAD_WITH_CUDA"] == "OFF"


def test_gemmpad_cuda_1_without_driver_or_toolkit_uses_the_wheels():
    p = plan(probes(env={"GEMMPAD_CUDA": "1"}))
    assert p.mode == "wheels" and p.requires == list(CUDA_WHEELS)


def test_gemmpad_cuda_1_prefers_an_installed_toolkit():
    assert plan(probes(env={"GEMMPAD_CUDA": "1"}, path_nvcc="/usr/bin/nvcc")).mode == "toolkit"


def test_gemmpad_cuda_wheels_ignores_the_toolkit():
    p = plan(probes(env={"GEMMPAD_CUDA": "wheels"}, path_nvcc="/usr/bin/nvcc"))
    assert p.mode == "wheels" and p.requires == list(CUDA_WHEELS)


def test_bad_gemmpad_cuda_is_a_clear_error():
    with pytest.raises(BuildConfigError, match="GEMMPAD_CUDA must be 0, 1 or wheels"):
        plan(probes(env={"GEMMPAD_CUDA": "yes"}))


@pytest.mark.parametrize(("env", "settings", "ccs", "archs"), [
    ({}, {}, ["9.0", "9.0"], "90a-real"),
    ({}, {}, ["8.0", "9.0"], "80-real;90a-real"),
    ({}, {}, ["12.0"], None),  # no machine code for it: the default set, whose PTX the driver compiles
    ({"GEMMPAD_CUDA_ARCHS": "all"}, {}, ["9.0"], None),
    ({"GEMMPAD_CUDA_ARCHS": "80-real,90a-real"}, {}, ["9.0"], "80-real;90a-real"),
    ({"CUDAARCHS": "89"}, {}, ["9.0"], None),  # CMake reads it itself
    ({}, {"cmake.define.CMAKE_CUDA_ARCHITECTURES": "86"}, ["9.0"], None),
])
def test_cuda_targets(env, settings, ccs, archs):
    p = plan(probes(env=env, path_nvcc="/usr/bin/nvcc", driver=(13000, ccs)), settings)
    assert p.archs == archs


def test_user_settings_win_over_the_plan(tmp_path):
    p = Plan("wheels", "test", archs="90a-real", requires=list(CUDA_WHEELS))
    toolkit = tmp_path / "nvidia" / "cu13"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "lib").mkdir()
    (toolkit / "bin" / "nvcc").write_text("")
    (toolkit / "lib" / "libcudart.so.13").write_text("")
    out = cmake_settings(p, {"cmake.define.CMAKE_CUDA_ARCHITECTURES": "89", "build.verbose": "true"}, toolkit)
    assert out["cmake.define.CMAKE_CUDA_ARCHITECTURES"] == "89" and out["build.verbose"] == "true"
    assert out["cmake.define.CMAKE_CUDA_COMPILER"] == str(toolkit / "bin" / "nvcc")
    assert out["cmake.define.CUDAToolkit_ROOT"] == str(toolkit)
    assert (toolkit / "lib64").resolve() == (toolkit / "lib").resolve()  # where nvcc.profile links from
    assert (toolkit / "lib" / "libcudart.so").resolve().name == "libcudart.so.13"  # what FindCUDAToolkit wants
    assert (toolkit / "bin" / "nvcc").stat().st_mode & 0o111


def test_wheels_missing_from_the_build_env_is_a_clear_error(tmp_path):
    p = Plan("wheels", "test", requires=list(CUDA_WHEELS))
    assert wheel_toolkit([str(tmp_path)]) is None
    with pytest.raises(BuildConfigError, match="compiler wheels are not in the build environment"):
        cmake_settings(p, {}, None)


@pytest.mark.parametrize(("setting", "wheels"), [("0", False), ("wheels", True)])
def test_backend_hook_adds_the_wheels_only_when_planned(monkeypatch, setting, wheels):
    """The PEP 517 hook pip calls, as pip calls it: from the project root, nothing downloaded."""
    pytest.importorskip("scikit_build_core")
    import gemmpad_backend

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("GEMMPAD_CUDA", setting)
    requires = gemmpad_backend.get_requires_for_build_wheel({})
    assert (set(CUDA_WHEELS) <= set(requires)) == wheels
    assert not any(r.startswith("nvidia-") for r in requires) or wheels
