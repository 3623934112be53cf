"""`python -m gemmpad` is the `gemmpad` command."""

import sys

from gemmpad.cli import main

sys.exit(main())
