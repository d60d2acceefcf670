"""ctxstore: a git-like, content-addressed store and runtime for the working state of LLM agents."""

__version__ = "0.1.0"
