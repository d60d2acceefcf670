"""Sessions through any git remote, on libgit2 (pygit2): remotes, push, fetch, pull, clone.

The mapping (which git objects carry ctxstore objects, ref names, write ordering) is specified
in docs/format.md, "Git remotes"; the user guide is docs/remotes.md. pygit2 is imported inside
functions only, so nothing here costs `ctx status` any start-up time.
"""
