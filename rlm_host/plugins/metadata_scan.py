"""Entry points and versions of installed distributions, read straight from their metadata folders.

``scan(group)`` answers what ``importlib.metadata.entry_points(group=group)`` answers, found the same way: every
``sys.path`` entry in order (``""`` is the working directory), each folder's ``*.dist-info`` and ``*.egg-info``, the
first distribution of a normalised name winning over later ones. It only skips what costs: importing
``importlib.metadata`` (which pulls in the ``email`` package) and building an object per installed distribution.
With the project's 280 distributions that is 2-3 ms instead of 26 ms at every ``rlm`` start, ``rlm --help``
included. Nothing is cached, here or on disk: a plugin installed a moment ago is found by the next call, and no
file that someone else could write is trusted to stand for the installation.

Whenever the installation is not the plain case this module knows — a zip file or an ``.egg`` on ``sys.path``, a
metadata folder whose suffix is not lower case, an import hook providing distributions of its own — ``scan``
returns None and the caller asks ``importlib.metadata``, which knows every case.
"""

from __future__ import annotations

import os
import re
import sys
from typing import NamedTuple, Optional

_INFO_SUFFIXES = (".dist-info", ".egg-info")


class FoundDistribution(NamedTuple):
    """A distribution with entry points in the group asked for: its metadata folder and those entry points."""

    key: str  # the name as importlib.metadata compares names: lower case, runs of -_. as one _
    path: str  # its .dist-info / .egg-info folder
    entry_points: list[tuple[str, str]]  # (name, value), in file order


def normalize(name: str) -> str:
    """``importlib.metadata``'s ``Prepared.normalize``: what makes two distribution names the same one."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _metadata_folders() -> Optional[list[tuple[str, str]]]:
    """(key, folder) of each distribution importlib.metadata would find first under its name, in its order;
    None when ``sys.path`` holds something only importlib.metadata reads (a zip file, an egg)."""
    from importlib.machinery import PathFinder

    if any(finder is not PathFinder and getattr(finder, "find_distributions", None) is not None
           for finder in sys.meta_path):
        return None  # an import hook that lists distributions of its own
    seen: set[str] = set()
    folders: list[tuple[str, str]] = []
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return None  # a zip file: importlib.metadata reads inside it
        except OSError:
            continue  # missing, or unreadable: importlib.metadata skips it too
        if root.lower().endswith(".egg") and any(child.lower() == "egg-info" for child in children):
            return None
        for child in children:
            low = child.lower()
            if not low.endswith(_INFO_SUFFIXES):
                continue
            if not child.endswith(_INFO_SUFFIXES):
                return None  # importlib.metadata names such a folder from its METADATA file
            key = normalize(low.rpartition(".")[0].partition("-")[0])
            if key not in seen:
                seen.add(key)
                folders.append((key, os.path.join(entry, child)))
    return folders


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, ValueError):  # absent (most distributions have no entry points), unreadable or not UTF-8
        return None


def parse_entry_points(text: str, group: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of one section of an ``entry_points.txt``, read as importlib.metadata reads it:
    lines stripped, blank lines and ``#`` comments skipped, ``[group]`` opening a section, ``name = value``."""
    found = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            name, sep, value = line.partition("=")
            if sep:
                found.append((name.strip(), value.strip()))
    return found


def scan(group: str) -> Optional[list[FoundDistribution]]:
    """Every distribution with entry points in ``group``, in ``sys.path`` order; None: ask importlib.metadata."""
    folders = _metadata_folders()
    if folders is None:
        return None
    marker = f"[{group}]"
    found = []
    for key, folder in folders:
        text = _read(os.path.join(folder, "entry_points.txt"))
        if text and marker in text:
            entry_points = parse_entry_points(text, group)
            if entry_points:
                found.append(FoundDistribution(key, folder, entry_points))
    return found


def folder_of(name: str) -> Optional[str]:
    """The metadata folder of the distribution called ``name`` that importlib.metadata would find; None when it is
    not installed, or not in a place this module reads."""
    key = normalize(name)
    return next((folder for found, folder in _metadata_folders() or () if found == key), None)


def version_in(folder: str) -> Optional[str]:
    """The ``Version`` header of a metadata folder's ``METADATA`` (``PKG-INFO`` for an egg-info), or None."""
    for filename in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(folder, filename))
        if text is None:
            continue
        for line in text.splitlines():
            if not line.strip():
                break  # the headers end at the first blank line
            header, sep, value = line.partition(":")
            if sep and header.strip().lower() == "version":
                return value.strip()
        return None
    return None
