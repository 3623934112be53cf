"""Where gemmpad keeps what belongs to the person using it: drawings, the personal model, caches.

One folder per user, where each platform expects application data, as `platformdirs`
answers (the same folders earlier versions computed by hand, so nobody's data moves):

    Linux:   $XDG_DATA_HOME/gemmpad, else ~/.local/share/gemmpad
    macOS:   ~/Library/Application Support/gemmpad
    Windows: %APPDATA%\\gemmpad (the roaming profile)

$GEMMPAD_HOME overrides it (tests, portable installs). Inside it:

    drawings/<digit>/*.json   the corrections and saved drawings (strokes, models/README.md)
    drawings/<digit>/*.png    the same drawings as pictures
    personal-model.npz        the model fine-tuned on them (+ .json card), loaded at start
    cache/                    replay and test arrays built once (safe to delete)
    data/mnist, data/pendigits  what `gemmpad data fetch` downloads (gemmpad.data.datafind)
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from gemmpad.errors import GemmpadError

APP = "gemmpad"
PERSONAL_MODEL = "personal-model.npz"


def data_dir() -> Path:
    """The per-user data folder (not created here: nothing is written until there is something to keep)."""
    forced = os.environ.get("GEMMPAD_HOME")
    if forced:
        if Path(forced).exists() and not Path(forced).is_dir():  # else "no drawings yet in FILE/drawings"
            raise GemmpadError(f"GEMMPAD_HOME={forced}: not a folder (it names the folder gemmpad keeps your "
                               "drawings and personal model in)")
        return Path(forced)
    folder = platformdirs.user_data_path(APP, appauthor=False, roaming=True)
    # The XDG spec says a relative $XDG_DATA_HOME is to be ignored; platformdirs would use it
    # and put the data wherever the command happens to run.
    return folder if folder.is_absolute() else Path.home() / ".local" / "share" / APP


def drawings_dir() -> Path:
    """Saved and corrected drawings, DIR/<digit>/ ($GEMMPAD_DRAWINGS overrides it, as before)."""
    forced = os.environ.get("GEMMPAD_DRAWINGS")
    return Path(forced) if forced else data_dir() / "drawings"


def personal_model_path() -> Path:
    """The fine-tuned model the window loads at start when it exists."""
    return data_dir() / PERSONAL_MODEL


def cache_dir() -> Path:
    """Arrays that take seconds to build and are the same every time (replay set, test slices)."""
    return data_dir() / "cache"
