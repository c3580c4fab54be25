"""BFCL's own prompt, decoder and checkers, imported without BFCL's provider SDKs.

``bfcl-eval`` is installed without its dependencies (``make setup``). Two of its modules
cannot be imported as installed:

- ``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` imports
  ``bfcl_eval.constants.model_config``, which imports every provider SDK (anthropic,
  openai, ...) only to build ``MODEL_CONFIG_MAPPING``; the checker reads one flag of it,
  ``underscore_to_dot``, in ``convert_func_name``. ``_install_model_config_stand_in``
  registers a stand-in module for that one import, whose mapping answers
  ``underscore_to_dot=False`` for ``STAND_IN_MODEL`` (Junction's agent is a local
  prompting model: function names keep their dots). Nothing else in the checker's import
  chain needs an SDK (``CHECKER_IMPORTS`` lists what it imports; a test fails if a new
  ``bfcl-eval`` imports anything else).
- ``bfcl_eval/model_handler/utils.py`` (home of ``default_decode_ast_prompting`` and
  ``formulate_system_prompt``) imports ``tenacity``, ``filelock`` and ``tree_sitter``
  grammars for Java/JavaScript at module level. Rather than stand in for third-party
  packages, ``_bfcl_functions`` compiles only the named functions from that file's source
  (``DECODER_FUNCTIONS``, taken verbatim by name with ``ast``) into a namespace holding
  what they use (``ast``, ``json``, ``re``, ``ReturnFormat`` and the prompt constants of
  ``bfcl_eval.constants.default_prompts``, which imports cleanly). Only the Python
  return format is reachable (Java/JS parsers are absent from that namespace).

Public entry points: ``system_prompt`` (BFCL's prompting layout for models without a
function-calling template), ``decode_calls`` (``default_decode_ast_prompting``, with a
guard: BFCL's decoder ``eval``s binary operations and lambdas of the model's text, so an
output holding a call or a name inside one is refused before decoding), ``check_calls``
(``ast_checker``) and ``check_answer`` (``agentic_checker``, BFCL's answer matcher).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import sys
import types
from functools import lru_cache
from pathlib import Path
from typing import Any

from junction.errors import JunctionError

__all__ = [
    "CHECKER_IMPORTS",
    "DECODER_FUNCTIONS",
    "STAND_IN_MODEL",
    "BfclImportError",
    "DecodeError",
    "check_answer",
    "check_calls",
    "decode_calls",
    "system_prompt",
]

STAND_IN_MODEL = "junction-local-prompting"
"""The model name handed to BFCL's checker (only ``convert_func_name`` reads it)."""

CHECKER_IMPORTS = (
    "re",
    "bfcl_eval.constants.enums",
    "bfcl_eval.constants.model_config",
    "bfcl_eval.constants.type_mappings",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter",
)
"""The modules ``ast_checker.py`` imports (bfcl-eval 2026.3.23); only ``model_config`` is
stood in for."""

DECODER_FUNCTIONS = (
    "default_decode_ast_prompting",
    "ast_parse",
    "resolve_ast_call",
    "resolve_ast_by_type",
    "formulate_system_prompt",
    "format_function_doc",
    "parse_prompt_variation_params",
)
"""The functions compiled from ``bfcl_eval/model_handler/utils.py`` (by name)."""

_MODEL_CONFIG = "bfcl_eval.constants.model_config"


class BfclImportError(JunctionError):
    """bfcl-eval is missing, or its checker/decoder no longer has the expected shape."""


class DecodeError(ValueError):
    """The agent's output holds a call that BFCL's decoder cannot parse (or refused)."""


class _StandInConfig:
    underscore_to_dot = False


class _StandInMapping(dict):
    """``MODEL_CONFIG_MAPPING`` for the checker: any name answers ``underscore_to_dot=False``."""

    def __missing__(self, key: str) -> _StandInConfig:
        return _StandInConfig()


def _install_model_config_stand_in() -> None:
    if _MODEL_CONFIG in sys.modules:
        return
    module = types.ModuleType(_MODEL_CONFIG, "Junction's stand-in (junction.agent.bfcl_checker)")
    vars(module)["MODEL_CONFIG_MAPPING"] = _StandInMapping()  # a module attribute
    sys.modules[_MODEL_CONFIG] = module


@lru_cache(maxsize=1)
def _checkers() -> tuple[Any, Any, Any]:
    """(ast_checker, agentic_checker, Language) from bfcl-eval."""
    _install_model_config_stand_in()
    try:
        ast_mod = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
        agentic = importlib.import_module(
            "bfcl_eval.eval_checker.agentic_eval.agentic_checker")
        enums = importlib.import_module("bfcl_eval.constants.enums")
    except ImportError as exc:
        raise BfclImportError(f"cannot import BFCL's checker ({exc}); install "
                              "`bfcl-eval` with `make setup`") from exc
    return ast_mod.ast_checker, agentic.agentic_checker, enums.Language


def _utils_path() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BfclImportError("bfcl-eval is not installed; run `make setup`")
    return Path(next(iter(spec.submodule_search_locations))) / "model_handler" / "utils.py"


@lru_cache(maxsize=1)
def _bfcl_functions() -> dict[str, Any]:
    """``DECODER_FUNCTIONS`` compiled from BFCL's source (module docstring)."""
    path = _utils_path()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in DECODER_FUNCTIONS if name not in found]
    if missing:
        raise BfclImportError(f"{path}: functions {missing} not found; this bfcl-eval "
                              "version changed its decoder")
    module = ast.Module(body=[found[name] for name in DECODER_FUNCTIONS], type_ignores=[])
    prompts = importlib.import_module("bfcl_eval.constants.default_prompts")
    enums = importlib.import_module("bfcl_eval.constants.enums")
    namespace: dict[str, Any] = {"ast": ast, "json": json, "re": re,
                                 "ReturnFormat": enums.ReturnFormat,
                                 "__name__": "bfcl_eval.model_handler.utils"}
    namespace.update({k: v for k, v in vars(prompts).items() if not k.startswith("__")})
    exec(compile(module, str(path), "exec"), namespace)  # BFCL's own code, by name
    return namespace


def system_prompt(functions: list[dict[str, Any]]) -> str:
    """BFCL's default system prompt (``DEFAULT_SYSTEM_PROMPT_FORMAT``: Python call format,
    no tool-call tag, functions as indented JSON, plaintext, classic style) for
    ``functions`` (``[{"name", "description", "parameters"}]``)."""
    ns = _bfcl_functions()
    return ns["formulate_system_prompt"](ns["DEFAULT_SYSTEM_PROMPT_FORMAT"], functions)


_EVALUATED = (ast.BinOp, ast.Lambda)


def _guard(text: str) -> None:
    """Refuse text whose BinOp/Lambda nodes hold a call, name or attribute (BFCL ``eval``s
    those nodes); ``DecodeError`` otherwise raised by ``ast`` is left to the decoder."""
    stripped = text.strip("`\n ")
    try:
        tree = ast.parse("[" + stripped.strip("[]") + "]", mode="eval")
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, _EVALUATED):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Call, ast.Name, ast.Attribute)):
                    raise DecodeError("refused: an expression BFCL's decoder would eval "
                                      "holds a call or a name")


def decode_calls(text: str) -> list[dict[str, dict[str, Any]]]:
    """The agent's text as BFCL calls ``[{name: {param: value}}]`` (BFCL's
    ``default_decode_ast_prompting``, Python format). Raises ``DecodeError`` (with BFCL's
    exception as its cause) when it cannot be decoded."""
    _guard(text)
    ns = _bfcl_functions()
    try:
        calls = ns["default_decode_ast_prompting"](text, ns["ReturnFormat"].PYTHON, False)
    except Exception as exc:
        raise DecodeError(f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(calls, list) or not all(
            isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict)
            for c in calls):
        raise DecodeError(f"decoded to {type(calls).__name__}, not a list of calls")
    return calls


def check_calls(functions: list[dict[str, Any]], calls: list[dict[str, Any]],
                ground_truth: list[dict[str, Any]], category: str) -> dict[str, Any]:
    """BFCL's ``ast_checker`` on decoded ``calls`` against ``ground_truth`` for
    ``category`` (simple, multiple, parallel, parallel_multiple, live_*), Python.

    ``functions`` are BFCL function docs (BFCL type names: dict, float, any, ...). Returns
    the checker's dict: ``valid`` and, when invalid, ``error`` and ``error_type``.
    """
    ast_checker, _, language = _checkers()
    return ast_checker(functions, calls, ground_truth, language.PYTHON, category,
                       STAND_IN_MODEL)


def check_answer(text: str, accepted: list[str]) -> dict[str, Any]:
    """BFCL's ``agentic_checker``: an accepted answer occurs in ``text`` as whole words,
    ignoring case and the punctuation ``,./-_*^()``. Returns ``valid`` (and ``error_type``)."""
    _, agentic_checker, _ = _checkers()
    return agentic_checker(text, list(accepted))
