"""Adapters that store other frameworks' state in ctxstore (optional extras; imported on demand)."""
