"""The `ctx` command line: a thin click shell over ctxstore's porcelain."""
