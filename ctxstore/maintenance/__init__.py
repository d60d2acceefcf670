"""Maintenance below the porcelain: whole-store checks (fsck), garbage collection and reflog
expiry. These read every root source and every object, so they live in one place."""
