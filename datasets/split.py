"""The train / evaluation split every suite family uses: one rule, by a stable hash of a row's id.

``split_of(row_id)`` says which part a row belongs to (``TRAIN_FRACTION`` of the rows are
train); ``SPLITS`` are the ``split`` arguments every suite builder takes (``"all"``: both
parts, what a cross-fitted suite builds, ``junction.learned.crossfit``). BFCL families keep
this fixed split; τ-Knowledge builds ``"all"`` and is cross-fitted, its split used only
where a fixed one is asked for.
"""

from __future__ import annotations

import hashlib

__all__ = ["SPLITS", "TRAIN_FRACTION", "split_of"]

TRAIN_FRACTION = 0.3
"""Share of each family's rows in the training part (``split_of``): enough gold candidates
for a per-family logistic model (about 60 rows of BFCL ``multiple``, 300 of
``live_multiple``, 40 of ``memory``) while most rows stay for evaluation."""

SPLITS = ("eval", "train", "all")
"""Valid ``split`` arguments of the suite builders."""


def split_of(row_id: str) -> str:
    """``"train"`` or ``"eval"``: the part a row belongs to, by a stable hash.

    The first 8 bytes of sha256(``"junction-split-v1:" + row_id``) as an integer, divided by
    2**64, below ``TRAIN_FRACTION`` is train. Depends on nothing but the id (no seed, no
    file order), so adding rows to a family never moves an existing row.
    """
    digest = hashlib.sha256(f"junction-split-v1:{row_id}".encode()).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < TRAIN_FRACTION else "eval"
