"""The package's version: the wheel's (pyproject.toml reads it from here) and samplecheck's,
whose CMake project() carries the same number (test_version checks that they agree)."""

__version__ = "0.1.0"
