"""Porcelain: one function per user-facing operation. They return values and never print;
`cli/` parses arguments, calls one of these, and renders text or --json."""
