"""The window's latency at every batch: median and p99 of each frame's forward pass.

    xvfb-run -a gemmpad bench latency [--replay FILE] [--backend cpu] [--frames 300]
        [--batches 1 2 4 ...] [--threads N] [--json]

Each batch runs `gemmpad app --replay FILE --frames N` (FILE: by default the README
screenshot's strokes, assets/screenshot-strokes.json of the checkout it is run in) in a
fresh process (the window open, drawing frames, R on: the network runs every frame as
in the window) and reads its JSON line. The figure to watch is p99 / median of the end-
to-end time: with more kernel threads than the cores the window leaves free, preempted
threads made p99 10-100x the median (issue 22); the window's thread cap
(gemmpad.ui.cores) is meant to keep it within ~3x at every batch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gemmpad.commands.args import MAX_FRAMES, MAX_THREADS, MAX_WINDOW_BATCH, integer
from gemmpad.errors import GemmpadError
from gemmpad.runtime import backends

# relative to the working directory, a checkout: assets/ is not in the installed package
REPLAY = Path("assets") / "screenshot-strokes.json"
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def measure(backend: str, batch: int, frames: int, threads: int | None = None, replay: Path = REPLAY) -> dict[str, Any]:
    """One `gemmpad app --replay ... --frames` run's JSON summary at `batch` (threads None:
    the window's own choice, gemmpad.ui.cores)."""
    cmd = [sys.executable, "-m", "gemmpad", "app", "--replay", str(replay), "--backend", backend,
           "--batch", str(batch), "--frames", str(frames), "--no-vsync", "--exit"]
    cmd += ["--threads", str(threads)] if threads else []
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise GemmpadError(f"batch {batch}: gemmpad app ran past 600 s for {frames} frames") from None
    if proc.returncode != 0:  # the window's own one line (no display, a bad drawing), as it said it
        said = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise GemmpadError(f"batch {batch}: gemmpad app failed: {said.removeprefix('gemmpad: error: ')}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=backends.NAMES, default="cpu", help="the window's backend (default: cpu)")
    p.add_argument("--frames", type=integer(1, MAX_FRAMES), default=300, help="frames timed at each batch (default: 300)")
    p.add_argument("--batches", type=integer(1, MAX_WINDOW_BATCH), nargs="+", default=list(BATCHES), metavar="B",
                   help="batches to time, each in its own window (default: 1 2 4 ... 256)")
    p.add_argument("--threads", type=integer(1, MAX_THREADS), help="kernel threads (default: the window's choice)")
    p.add_argument("--json", action="store_true", help="one JSON object with every row")
    p.add_argument("--replay", type=Path, default=REPLAY, metavar="FILE",
                   help="the drawing replayed every frame, a strokes file (`gemmpad app --record FILE` makes one; "
                        f"default: {REPLAY}, in a gemmpad checkout)")


def run(args: argparse.Namespace) -> int:
    if not args.replay.is_file():
        raise GemmpadError(f"--replay {args.replay}: no such strokes file" + (
            " (the default is a gemmpad checkout's: run from one, or name a drawing that `gemmpad app --record FILE` "
            "saved)" if args.replay == REPLAY else ""))
    from gemmpad.ui.app import display_problem  # (the window's own test; imported here, as the window is only run)

    problem = display_problem()
    if problem:  # said once, before any window, in this command's words (each window's is about `gemmpad app`)
        raise GemmpadError(f"{problem}: the latency is the window's, which needs a display; run it under a virtual "
                           "one with `xvfb-run -a gemmpad bench latency ...`")
    rows = []
    for b in args.batches:
        s = measure(args.backend, b, args.frames, args.threads, args.replay)
        s["e2e_p99_over_median"] = s["e2e_p99_us"] / s["e2e_median_us"]
        rows.append(s)
        if not args.json:
            print(f"batch {b:5d}  {s['kernel']:24s} threads {s['cpu_threads']}  kernel median {s['kernel_median_us']:9.1f} "
                  f"p99 {s['kernel_p99_us']:9.1f}  e2e median {s['e2e_median_us']:9.1f} p99 {s['e2e_p99_us']:9.1f} us "
                  f" p99/median {s['e2e_p99_over_median']:5.2f}", flush=True)
    if args.json:
        print(json.dumps({"load_avg": os.getloadavg(), "rows": rows}))
    return 0
