"""`gemmpad info`: says what is built, what runs here and why not."""

from __future__ import annotations

import json

from gemmpad import native, registry
from tests.cli_helpers import run_cli


def test_info_text(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "info")
    assert rc == 0
    assert "versions: gemmpad" in out and "numpy" in out
    assert "CPU SIMD features used" in out
    assert "CUDA" in out and "model:" in out
    for spec in registry.kernels():
        assert spec.name in out
    status = native.cuda_status()
    if status.built and not status.available:
        assert status.reason in out  # the reason a GPU choice is greyed out


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
