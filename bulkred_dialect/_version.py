"""The package version (one place: the package, the compile cache key and pyproject read it)."""

__version__ = "0.1.0"
