"""The Learn button's worker: one fine-tune at a time on a thread of its own (no Dear PyGui
here), polled by the window every frame; the Learn panel (gemmpad.ui.learn_panel) shows it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from gemmpad.data import drawings, userdata
from gemmpad.errors import GemmpadError
from gemmpad.learn import finetune, rehearsal, rehearsal_sets
from gemmpad.runtime.model import Model

SETTINGS = finetune.Settings(holdout=0.2)


def _key(base: Model) -> tuple[str, bytes]:
    """A base model as the sets kept in memory belong to it: its file and its weights (the
    window may load the same model twice)."""
    return str(base.path), finetune.weights_digest(base.weights)


class Learner:
    """One fine-tune at a time on a background thread; the window polls it every frame."""

    def __init__(self, drawings_dir: Path, cache_dir: Path | None = None, replay_rows: int | None = None) -> None:
        self.drawings_dir = drawings_dir
        self.cache_dir = cache_dir if cache_dir is not None else userdata.cache_dir()
        self.replay_rows = replay_rows
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._status = ("", 0.0)
        self._result: tuple[finetune.Outcome, list[drawings.Example], list[str]] | Exception | None = None
        self._cache: finetune.LearnCache | None = None  # kept between Learns (and on disk between sessions)
        self._refs: tuple[tuple[str, bytes], rehearsal_sets.References] | None = None  # the base's (_key) sets, in memory
        self._reader: threading.Thread | None = None  # prefetch()'s
        self.pressed_at = 0.0  # time.perf_counter() when the running or last Learn was asked for

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def status(self) -> tuple[str, float]:
        """(what is happening, fraction done)."""
        with self._lock:
            return self._status

    def _say(self, text: str, fraction: float) -> None:
        with self._lock:
            self._status = (text, fraction)

    def start(self, base: Model, settings: finetune.Settings = SETTINGS) -> bool:
        """Begin a fine-tune of `base`; False when one is already running."""
        if self.running:
            return False
        self._stop, self._result = False, None
        self.pressed_at = time.perf_counter()
        self._thread = threading.Thread(target=self._work, args=(base, settings), name="gemmpad-learn", daemon=True)
        self._thread.start()
        return True

    def prefetch(self, base: Model | None = None) -> None:
        """Read the drawings the cache does not hold yet, in the background (the window calls
        this at start and after each saved drawing): painting a strokes file takes ~4 ms, so
        a first Learn over 200 drawings would otherwise spend ~0.9 s of the 2-core VM on it.
        With `base` (at start), also load its Learn sets and its figures on them, so the first
        Learn does not wait for them either."""
        if self.running or (self._reader is not None and self._reader.is_alive()):
            return  # a Learn reads the folder itself; a running read picks up what it finds
        self._reader = threading.Thread(target=self._read_quietly, args=(base,), name="gemmpad-learn-read",
                                        daemon=True)
        self._reader.start()

    def _read_quietly(self, base: Model | None) -> None:
        try:
            with threadpool_limits(1, user_api="blas"):
                self._read(lambda _line: None)
                if base is not None and self._cache is not None:
                    self._refs = (_key(base), rehearsal.sets_for(base, None, self.cache_dir, self.replay_rows))
                    self._cache.base(base.weights, self._refs[1])
        except Exception:  # noqa: BLE001  (a Learn does it again and reports what is wrong)
            pass

    def _read(self, say: drawings.Say) -> list[drawings.Example]:
        """Every drawing in the folder, painting only those the cache does not hold."""
        if self._cache is None:
            self._cache = finetune.LearnCache.load(self.cache_dir)
        return drawings.read_folder(self.drawings_dir, say=say, known=self._cache.drawings) \
            if self.drawings_dir.is_dir() else []

    def _work(self, base: Model, settings: finetune.Settings) -> None:
        # One BLAS thread: the products here are small, and on a busy 2-core machine OpenBLAS's
        # threads wait for each other (painting 200 drawings: 2.5 s of CPU with them, 0.6 s without).
        if self._reader is not None:
            self._reader.join()  # one reader of the cache at a time, and one owner of the BLAS setting
        with threadpool_limits(1, user_api="blas"):
            self._learn(base, settings)

    def _learn(self, base: Model, settings: finetune.Settings) -> None:
        try:
            self._say("reading your drawings", 0.0)
            skipped: list[str] = []
            examples = self._read(skipped.append)
            if not examples:
                raise GemmpadError("no corrections yet: click the right digit's bar (or press its key) "
                                   "when a reading is wrong")
            if self._refs is None or self._refs[0] != _key(base):  # once per base model and session
                self._say("first Learn: loading the sets it compares with", 0.02)
                self._refs = (_key(base), rehearsal.sets_for(base, None, self.cache_dir, self.replay_rows,
                                                       log=lambda s: self._say(s.strip(), 0.02)))
            outcome = finetune.learn(base, examples, self._refs[1], settings,
                                     progress=lambda s, f: self._say(s, 0.05 + 0.9 * f),
                                     should_stop=lambda: self._stop, cache=self._cache)
            try:
                self._cache.save(self.cache_dir, examples)
            except OSError as exc:  # a read-only cache folder costs the next session's speed, not this Learn
                skipped.append(f"could not keep the drawings' copies in {self.cache_dir}: {exc.strerror or exc}")
            self._say("done", 1.0)
            self._result = (outcome, examples, skipped)
        except Exception as exc:  # shown in the panel; the window goes on with the old model
            self._result = exc

    def take(self) -> tuple[finetune.Outcome, list[drawings.Example], list[str]] | Exception | None:
        """The finished fine-tune's result once (or its error); None while running or idle."""
        if self.running or self._result is None:
            return None
        result, self._result = self._result, None
        return result

    def cancel(self, timeout: float = 5.0) -> None:
        self._stop = True
        if self._thread is not None:
            self._thread.join(timeout)

    def wait(self, timeout: float = 120.0) -> bool:
        """Block until the running fine-tune ends (tests)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running
