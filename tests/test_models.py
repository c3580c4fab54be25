"""Embedded-model assembly: parts concatenated in order, pinned size and sha256 enforced."""

from __future__ import annotations

import hashlib
import sys

import pytest

from junction import models
from junction.models import EmbeddedModel, ModelError, embedded_model_path


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """A two-part 'model' made of real part packages on sys.path (a few bytes each)."""
    parts = [b"GGUF-part-one|", b"part-two"]
    for i, data in enumerate(parts, 1):
        pkg = tmp_path / "pkgs" / f"tiny_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part0{i}.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part0{i}.bin')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    monkeypatch.setenv("JUNCTION_STATE_DIR", str(tmp_path / "state"))
    whole = b"".join(parts)
    whole_sha, whole_size = hashlib.sha256(whole).hexdigest(), len(whole)

    def register(sha=whole_sha, size=whole_size):
        model = EmbeddedModel(name="tiny", filename="tiny.gguf",
                              packages=("tiny_part1", "tiny_part2"), size=size, sha256=sha,
                              family="test")
        monkeypatch.setitem(models.EMBEDDED_MODELS, "tiny", model)
        return model

    yield register, whole, tmp_path / "state" / "models"
    for name in ("tiny_part1", "tiny_part2"):
        sys.modules.pop(name, None)


def test_parts_are_concatenated_in_order_and_checked(tiny_model) -> None:
    register, whole, _folder = tiny_model
    register()
    path = embedded_model_path("tiny")
    assert path.read_bytes() == whole
    assert embedded_model_path("tiny") == path  # the second call reuses the checked file


def test_a_wrong_pin_fails_and_leaves_no_file(tiny_model) -> None:
    register, _, folder = tiny_model
    register(sha="0" * 64)
    with pytest.raises(ModelError, match=r"sha256 .* != pinned"):
        embedded_model_path("tiny")
    assert not any(folder.glob("tiny.gguf*"))  # no partial or wrong file left behind
    register(size=3)
    with pytest.raises(ModelError, match="bytes != pinned 3"):
        embedded_model_path("tiny")


def test_a_missing_part_package_names_it(tiny_model, monkeypatch) -> None:
    register, _, _ = tiny_model
    model = register()
    monkeypatch.setitem(models.EMBEDDED_MODELS, "tiny",
                        EmbeddedModel(**{**model.__dict__, "packages": ("tiny_part1", "nope_9"),
                                         "extra": "tiny-extra"}))
    with pytest.raises(ModelError,
                       match=r"package nope_9 is not installed .*junction\[tiny-extra\]"):
        embedded_model_path("tiny")


def test_the_default_model_matches_its_pin() -> None:
    path = embedded_model_path()
    assert path.stat().st_size == models.EMBEDDED_MODELS[models.DEFAULT_MODEL].size
