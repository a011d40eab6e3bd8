"""The test environment installed from python/requirements-test.txt is the one intended."""

import importlib.metadata
import os

import pytest

REQUIREMENTS = os.path.join(os.path.dirname(__file__), "..", "requirements-test.txt")


def _pinned():
    names = []
    with open(REQUIREMENTS, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line.split("==", 1)[0].strip().lower())
    return names


def test_pygame_and_pygame_ce_are_not_both_pinned():
    """Both install the folder ``pygame``; with both, the last one installed wins file by file."""
    names = _pinned()
    assert not ("pygame" in names and "pygame-ce" in names), names


def test_only_pygame_ce_is_installed():
    """mpe2 needs pygame-ce; upstream pygame beside it would overwrite its files."""

    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("pygame")
    assert importlib.metadata.distribution("pygame-ce").version
    import pygame

    assert getattr(pygame, "IS_CE", False), "the pygame package folder is not pygame-ce's"
