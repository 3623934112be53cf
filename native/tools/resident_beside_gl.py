"""What OpenGL drawing on the same GPU does to the batch-1 forward pass, and back (issue 44:
"measure what it does when the window draws on the same GPU").

    python native/tools/resident_beside_gl.py GL_LOAD_BINARY

GL_LOAD_BINARY is native/tools/gl_load.c built (its header says how); it draws frames in another
process, as the window's OpenGL context would. For cuda.mlp_resident (the persistent kernel) and
cuda.mlp_fused (a graph launch per call) this prints, alone and beside the GL frames (60 frames a
second, and back to back): batch-1 end to end per call, back to back and paced at 60 a second (the
app's one call per frame), median and p99 in us; and the GL frame times beside each, including
beside a resident kernel that is running but idle. An experiment, not part of the app.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time

import numpy as np

from gemmpad import _cuda
from gemmpad.bench.timing import sample_calls


def calls(mlp: object, kernel: str, n: int, pace_s: float) -> list[float]:
    """Per-call end-to-end times (us, from Python) of n batch-1 passes, pace_s apart (0: back to
    back), after 50 untimed ones: gemmpad.bench.timing's loop, each call timed around forward()."""
    rng = np.random.default_rng(1)
    x = np.zeros((1, 784), np.float32)
    x[0, rng.choice(784, 230, replace=False)] = 0.7
    out = np.empty((1, 10), np.float32)

    def call() -> tuple[float, float]:
        t0 = time.perf_counter_ns()
        mlp.forward(x, out, kernel)  # type: ignore[attr-defined]
        # kernel time not asked: for cuda.mlp_fused it waits for an event between the calls
        return math.nan, (time.perf_counter_ns() - t0) * 1e-3

    got = sample_calls(call, 0.0, warmup=50, min_reps=n, max_reps=n, pause_s=pace_s)
    assert got is not None  # (nothing cancels it)
    return got.e2e_us


def stats(times: list[float]) -> str:
    s = sorted(times)
    return f"{statistics.median(s):8.2f} / {s[int(0.99 * (len(s) - 1))]:8.2f}"


def gl(binary: str, fps: float, seconds: float) -> subprocess.Popen[str]:
    p = subprocess.Popen([binary, str(fps), "50", str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    assert p.stdout is not None
    first = p.stdout.readline().strip()  # "started": its context exists and draws
    if "started" not in first:
        raise SystemExit(f"gl_load did not start: {first} {p.stdout.read()}")
    return p


def gl_result(p: subprocess.Popen[str]) -> str:
    out = p.communicate()[0].strip().splitlines()
    return out[-1].replace("gl_load: ", "") if out else "no output"


def main() -> None:
    binary = sys.argv[1]
    rng = np.random.default_rng(0)
    shapes = ((784, 100), (100,), (100, 100), (100,), (100, 10), (10,))
    mlp = _cuda.Mlp(*(rng.normal(0, 0.1, s).astype(np.float32) for s in shapes))
    print("GL alone, 60 fps:", gl_result(gl(binary, 60, 3)), flush=True)
    print("GL alone, back to back:", gl_result(gl(binary, 0, 3)), flush=True)
    mlp.resident_start(idle_exit_s=0)  # a kernel that never returns on its own
    time.sleep(0.1)
    print("GL beside an idle resident kernel, 60 fps:", gl_result(gl(binary, 60, 3)), flush=True)
    print("GL beside an idle resident kernel, back to back:", gl_result(gl(binary, 0, 3)), flush=True)
    mlp.resident_start(idle_exit_s=1.0)  # the default: it returns after 1 s without a request
    calls(mlp, "cuda.mlp_resident", 1, 0.0)
    time.sleep(1.2)
    print(f"resident kernel returned after idling: {mlp.resident_idle}", flush=True)
    print("GL after the resident kernel's idle exit, back to back:", gl_result(gl(binary, 0, 3)), flush=True)
    print("kernel / scene: end to end us, back to back (median / p99) | paced at 60 a second (median / p99) | GL")
    for kernel in ("cuda.mlp_resident", "cuda.mlp_fused"):
        if kernel != "cuda.mlp_resident":
            mlp.resident_stop()
        for scene, fps in (("alone", None), ("GL 60 fps", 60.0), ("GL back to back", 0.0)):
            p = gl(binary, fps, 4.5) if fps is not None else None
            fast = calls(mlp, kernel, 3000, 0.0)
            paced = calls(mlp, kernel, 150, 1 / 60)
            print(f"{kernel:18s} {scene:16s} {stats(fast)} | {stats(paced)} | {gl_result(p) if p else ''}",
                  flush=True)
    mlp.resident_stop()


if __name__ == "__main__":
    main()
