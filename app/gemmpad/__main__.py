"""`python -m gemmpad` is the `gemmpad` command."""

import sys

from gemmpad.commands.cli import main

sys.exit(main())
