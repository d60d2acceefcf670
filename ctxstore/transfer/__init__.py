"""Portable session archives: the pack file format (packfile) and importing it (unpack)."""
