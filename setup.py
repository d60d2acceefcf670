"""Only the package list lives here: every ctxstore.* package found on disk, plus the CLI,
which sits in cli/ and installs as ctxstore.cli (see package-dir in pyproject.toml)."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["ctxstore", "ctxstore.*"]), "ctxstore.cli"])
