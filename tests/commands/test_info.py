"""`gemmpad info`: says what is built, what runs here and why not."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from gemmpad.runtime import native, registry

from tests.cli_helpers import run_cli


def test_info_text(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "info")
    assert rc == 0
    assert "versions: gemmpad" in out and "numpy" in out
    assert "CPU SIMD features used" in out
    assert "CUDA" in out and "model: the shipped model: name=mnist-mlp" in out
    from gemmpad.runtime.model import default_model_path

    assert str(default_model_path()) not in out  # a path inside the installed package means nothing to a user
    for spec in registry.kernels():
        assert spec.name in out
    status = native.cuda_status()
    if status.built and not status.available:
        assert status.reason in out  # the reason a GPU choice is greyed out
        assert status.detail in out  # and CUDA's own words, for a bug report


def test_info_json(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "info", "--json")
    assert rc == 0
    info = json.loads(out)
    assert set(info) >= {"versions", "cpu_features", "cuda", "backends", "kernels", "model"}
    assert info["backends"]["numpy"] == "ok"
    assert info["cuda"]["built"] == (native.cuda_module_if_built() is not None)
    if info["cuda"]["built"]:
        assert info["cuda"]["archs"]  # compiled architectures are known
        assert "cuda.mlp_fused" in [k["name"] for k in info["kernels"]]


def test_model_scores_and_model_errors(monkeypatch, capsys, tmp_path):
    """The card's scores are shown; without a loadable model, info still answers and says why."""
    from gemmpad.commands import info
    from gemmpad.errors import ModelFileError
    from gemmpad.runtime.model import Model

    from tests.runtime.test_classifier import random_model

    card = {"name": "m", "results": {"mnist_test_accuracy": 0.98765, "drawn_accuracy": {"all": 0.9912, "1-flag": 0.9}}}
    model = Model(random_model(np.random.default_rng(0)).weights, card=card)
    assert model.scores() == ["MNIST test 98.77 %", "drawn digits 99.1 %"]
    assert Model(model.weights).scores() == []
    real = {**card, "results": {**card["results"], "real_writers": {"mean": 0.98876, "worst": 0.97}}}
    assert Model(model.weights, card=real).scores()[0] == "unseen writers 98.9 %"  # people first
    monkeypatch.setattr(info, "load_model", lambda: model)
    rc, out, err = run_cli(monkeypatch, capsys, "info")
    assert rc == 0 and "model scores: MNIST test 98.77 %, drawn digits 99.1 %" in out

    def broken():
        raise ModelFileError("model file not found: /nowhere/mnist-mlp.npz")

    monkeypatch.setattr(info, "load_model", broken)
    rc, out, err = run_cli(monkeypatch, capsys, "info")
    assert rc == 0 and "model: model file not found: /nowhere/mnist-mlp.npz" in out


@pytest.mark.parametrize("arch, name", [("90a-real", "sm_90a"), ("90-virtual", "compute_90 (PTX)"), ("86", "sm_86 + PTX"),
                                        ("native", "native"), ("100f-real", "sm_100f")])
def test_arch_names(arch, name):
    from gemmpad.commands.info import arch_name

    assert arch_name(arch) == name


def test_info_lists_the_ladder_without_the_cuda_module(monkeypatch, capsys):
    """A laptop's `gemmpad info` still lists every CUDA rung with its source, committed figures and
    why it cannot run here, the reason said once."""
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "")
    native.cuda_status.cache_clear()
    try:
        rc, out, err = run_cli(monkeypatch, capsys, "info")
        cuda = registry.kernels(device="cuda")
        rc_json, out_json, _ = run_cli(monkeypatch, capsys, "info", "--json")
    finally:
        native.cuda_status.cache_clear()
    assert rc == 0 and rc_json == 0 and len(cuda) > 20
    for spec in cuda:
        assert spec.name in out and spec.source in out
    assert out.count("this install has no CUDA module") == 1
    # (numbered in the order the reasons first appear: a CPU kernel this CPU cannot run may come first)
    assert re.search(r"unavailable \(\d\): this install has no CUDA module: gemmpad was built without", out)
    measured = "; ".join(f.short() for f in registry.figures("cuda.10_wgmma_fp16"))
    assert "H200 " in measured and f"native/cuda/gemm/10_wgmma_tma.cu; {measured}\n" in out
    listed = {k["name"]: k for k in json.loads(out_json)["kernels"]}
    wgmma = listed["cuda.10_wgmma_fp16"]
    assert not wgmma["available"] and wgmma["source"] == "native/cuda/gemm/10_wgmma_tma.cu"
    assert wgmma["unavailable_reason"].startswith("this install has no CUDA module: ")
    assert {f["machine"] for f in wgmma["figures"]} == {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}


def test_info_names_the_unsure_detectors(monkeypatch, capsys, tmp_path):
    """Which unsure detector the shipped and the personal model read with, or why there is none: a model
    without one reads scribbles as digits, and info said nothing of it."""
    from gemmpad.runtime import unsure
    from gemmpad.runtime.model import load_model

    shipped = load_model()
    det, why = unsure.for_model(shipped)
    assert det is not None, why
    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path))
    rc, out, _ = run_cli(monkeypatch, capsys, "info")
    assert rc == 0 and "unsure detector: mnist-mlp.unsure.json\n" in out
    assert "personal model's unsure detector" not in out  # no personal model yet
    personal = tmp_path / "personal-model.npz"
    shipped.save(personal)
    rc, out, _ = run_cli(monkeypatch, capsys, "info")
    assert "your personal model's unsure detector: none: none beside the model (personal-model.unsure.json" in out
    tuned = type(shipped)({k: v + np.float32(1e-3) for k, v in shipped.weights.items()})
    tuned.save(personal)
    unsure.save(unsure.carried(det, tuned), unsure.path_for(personal))
    rc, out, _ = run_cli(monkeypatch, capsys, "info", "--json")
    entry = json.loads(out)["user_data"]["personal_unsure_detector"]
    assert entry == {"path": str(unsure.path_for(personal)), "carried_over": True}
    rc, out, _ = run_cli(monkeypatch, capsys, "info")
    assert "your personal model's unsure detector: personal-model.unsure.json (carried over by Learn)\n" in out
