"""The command line: `gemmpad` and its thin subcommand modules."""
