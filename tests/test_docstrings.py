"""Every dotted name and repository path a docstring quotes resolves.

Docstrings (module, class and function docstrings, and the string statements that document
a constant or a field) under ``junction/``, ``flows/``, ``datasets/``, ``tests/`` and
``bench/`` point readers at the project's dotted names and at paths in the checkout; a
rename that leaves one behind is a stale pointer. Each dotted name must import (a module,
then attributes, a pydantic field or an annotated dataclass field); each path must exist
in the checkout. Names that are not Python objects (a file name, a logger) are listed in
``NOT_OBJECTS`` with what they are.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for folder in ("junction", "flows", "datasets", "tests", "bench")
               for p in (ROOT / folder).rglob("*.py"))
DOTTED = re.compile(r"(?<![\w./-])((?:junction|flows|junction_datasets)(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"(?<![\w./-])((?:junction|flows|datasets|bench|tests|docs)/[\w./-]*\w)")
NOT_OBJECTS = {
    "junction.duckdb": "the warehouse's DuckDB file name",
    "junction.judge.llama_cpp": "the logger llama.cpp's output is routed to",
    "junction.plugins": "the entry-point group every catalog loads (junction.registry.PLUGINS)",
}
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])
"""The prose a reader follows: every dotted name and path it quotes must resolve too."""


def _strings(path: Path) -> list[tuple[str, int]]:
    """(text, line) of every docstring and documenting string statement in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(n.value.value, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)]


def resolves(name: str) -> bool:
    """Whether dotted ``name`` is a module, or a module's attribute path (a pydantic or
    annotated dataclass field counts)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
                continue
            fields = {**(getattr(obj, "__annotations__", None) or {}),
                      **(getattr(obj, "model_fields", None) or {})}
            return attr in fields and attr == parts[-1]
        return True
    return False


def quoted(path: Path) -> list[tuple[str, str, int]]:
    """("name" or "path", what, line) for every pointer a docstring of ``path`` quotes."""
    out = []
    for text, line in _strings(path):
        out += [("name", m.group(1), line) for m in DOTTED.finditer(text)]
        out += [("path", m.group(1), line) for m in PATH.finditer(text)
                if not any(c in m.group(1) for c in "*<{")]
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_name_and_path_resolves(path):
    stale = [f"line {line}: {what}" for kind, what, line in quoted(path)
             if (kind == "name" and what not in NOT_OBJECTS and not resolves(what))
             or (kind == "path" and not (ROOT / what).exists())]
    assert not stale, f"{path.relative_to(ROOT)}: stale pointers {stale}"


def _stale(pointers: list[tuple[str, str, int]]) -> list[str]:
    return [f"line {line}: {what}" for kind, what, line in pointers
            if (kind == "name" and what not in NOT_OBJECTS and not resolves(what))
            or (kind == "path" and not (ROOT / what).exists())]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_and_path_the_docs_quote_resolves(path):
    pointers = []
    for line_no, text in enumerate(path.read_text().splitlines(), start=1):
        pointers += [("name", m.group(1), line_no) for m in DOTTED.finditer(text)]
        pointers += [("path", m.group(1), line_no) for m in PATH.finditer(text)
                     if not any(c in m.group(1) for c in "*<{")
                     and not text[m.end():].startswith(("/<", "/{", "/*"))]  # a pattern
    stale = _stale(pointers)
    assert not stale, f"{path.relative_to(ROOT)}: stale pointers {stale}"


def test_the_check_sees_a_stale_name_and_path(tmp_path):
    module = tmp_path / "x.py"
    module.write_text('"""See ``junction.agent.LlamaAgent`` and ``datasets/bfcl.py``; '
                      '``junction.agent.llm.LlamaAgent.generate`` and '
                      '``junction.evidence.traces.TaskTraceRecord.pool_rule`` are fine."""\n')
    found = {what: kind for kind, what, _ in quoted(module)}
    assert not resolves("junction.agent.LlamaAgent")
    assert not (ROOT / "datasets/bfcl.py").exists() and found["datasets/bfcl.py"] == "path"
    assert resolves("junction.agent.llm.LlamaAgent.generate")
    assert resolves("junction.evidence.traces.TaskTraceRecord.pool_rule")
