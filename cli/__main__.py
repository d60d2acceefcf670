"""`python -m ctxstore.cli` runs `ctx`."""

from ctxstore.cli.main import main

main()
