"""Package indexes stay true: every package's ``__init__`` docstring names each of its
modules and subpackages, and every module it names exists.

A module ``m`` of package ``p`` is named by ``m`` in double backticks (bare, as ``m.py`` or
``m/``, or as ``p.m`` or a longer dotted name under it) or by a plain ``m.py`` or ``m/``.
What the docstring claims is a module: a plain or backticked ``x.py``, a backticked
``x/``, a backticked ``p.x`` (its first part after the package) and the first backticked
lower-case name of a bullet line (``- <x in double backticks>: ...``). The packages are
every folder with an ``__init__.py`` under ``junction/``, ``flows/`` and ``datasets/``
(imported as ``junction_datasets``); the docstrings are read with ``ast``, nothing is
imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent for top in ("junction", "flows", "datasets")
                  for p in (ROOT / top).rglob("__init__.py") if "__pycache__" not in p.parts)


def _dotted(package: Path) -> str:
    parts = package.relative_to(ROOT).parts
    return ".".join(("junction_datasets", *parts[1:]) if parts[0] == "datasets" else parts)


def _members(package: Path) -> set[str]:
    """The package's modules and subpackages (by name)."""
    return ({p.stem for p in package.glob("*.py") if p.stem != "__init__"}
            | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()})


def _docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def _named(doc: str, dotted: str, name: str) -> bool:
    m, p = re.escape(name), re.escape(dotted)
    return bool(re.search(rf"``(?:{p}\.)?{m}(?:\.py|/|\.[\w.]+)?``", doc)
                or re.search(rf"(?<![\w/.]){m}(?:\.py\b|/)", doc))


def _claimed(doc: str, dotted: str) -> set[str]:
    """The names the docstring gives as modules of the package (module docstring)."""
    claims = set(re.findall(r"(?<![\w/.])([a-z_][a-z0-9_]*)\.py\b", doc))
    claims |= set(re.findall(r"``([a-z_][a-z0-9_]*)/``", doc))
    claims |= set(re.findall(rf"``{re.escape(dotted)}\.([a-z_][a-z0-9_]*)", doc))
    claims |= set(re.findall(r"(?m)^\s*- ``([a-z_][a-z0-9_]*)``", doc))
    return claims


@pytest.mark.parametrize("package", PACKAGES, ids=_dotted)
def test_the_package_index_names_every_module(package):
    doc, dotted = _docstring(package), _dotted(package)
    missing = sorted(m for m in _members(package) if not _named(doc, dotted, m))
    assert not missing, f"{package.relative_to(ROOT)}/__init__.py's docstring does not " \
                        f"name {missing}"


@pytest.mark.parametrize("package", PACKAGES, ids=_dotted)
def test_every_module_the_index_names_exists(package):
    doc, dotted = _docstring(package), _dotted(package)
    gone = sorted(_claimed(doc, dotted) - _members(package))
    assert not gone, f"{package.relative_to(ROOT)}/__init__.py's docstring names " \
                     f"{gone}, which are not modules of {dotted}"


def test_the_rules_catch_a_stale_index():
    # the two checks on a made-up index: one module left out, one named that is gone
    doc = "- ``store``: files;\n- ``gone``: removed; ``pkg.kept.f`` and old.py"
    assert _named(doc, "pkg", "store") and _named(doc, "pkg", "kept")
    assert not _named(doc, "pkg", "views")
    assert _claimed(doc, "pkg") == {"store", "gone", "kept", "old"}
