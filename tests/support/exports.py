"""Checks for a package's public surface (``__all__``), shared by the export tests."""

from __future__ import annotations

from types import ModuleType


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def assert_public_surface(module: ModuleType, expected: set[str]) -> None:
    names = list(module.__all__)
    assert names == sorted(names, key=isort_key), "__all__ is not sorted"
    assert set(names) == expected
    missing = [name for name in names if not hasattr(module, name)]
    assert missing == []
