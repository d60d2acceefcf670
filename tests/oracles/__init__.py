"""Independent oracles: code that computes expected answers from raw inputs without importing
the ctxstore code it judges."""
