"""Suites from a JSON Lines file: one ``BenchmarkTask`` object per line.

Every line is validated before any task is returned; the first bad line raises
``DatasetError`` naming the file, the line number, the task id (when readable) and the
field, so a malformed suite is refused whole and nothing downstream is written. All tasks
of a file must share one ``suite`` name, and task ids must be unique.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from junction.errors import DatasetError
from junction.tasks import BenchmarkTask

from junction_datasets import SuiteBuild

__all__ = ["load_suite_file", "MAX_LINE_BYTES"]

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line accepted (bytes): a task past 16 MiB is refused, not read."""


def _refuse_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed")


def load_suite_file(path: str | Path, size: int | None = None) -> SuiteBuild:
    """Load and validate every task of ``path``; keep the first ``size`` (None: all).

    Raises ``DatasetError`` (file, line, task id, field) on the first bad line, an empty
    file, mixed suite names or a duplicate task id.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such suite file")
    tasks: list[BenchmarkTask] = []
    seen: dict[str, int] = {}
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise DatasetError(f"{path}:{line_no}: line is {len(raw)} bytes; "
                                   f"the limit is {MAX_LINE_BYTES}")
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
                obj = json.loads(text, parse_constant=_refuse_constant)
            except (UnicodeDecodeError, ValueError) as exc:
                raise DatasetError(f"{path}:{line_no}: not valid JSON: {exc}") from None
            if not isinstance(obj, dict):
                raise DatasetError(f"{path}:{line_no}: expected a JSON object, got "
                                   f"{type(obj).__name__}")
            task_id = obj.get("task_id", "?")
            try:
                task = BenchmarkTask.model_validate(obj)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "task"
                shown = repr(first.get("input"))
                shown = shown if len(shown) <= 80 else shown[:77] + "..."
                raise DatasetError(
                    f"{path}:{line_no}: task {task_id!r}: {field}: {first['msg']} (got {shown})"
                ) from None
            if task.task_id in seen:
                raise DatasetError(f"{path}:{line_no}: duplicate task id {task.task_id!r} "
                                   f"(first on line {seen[task.task_id]})")
            seen[task.task_id] = line_no
            if tasks and task.suite != tasks[0].suite:
                raise DatasetError(f"{path}:{line_no}: suite {task.suite!r} differs from "
                                   f"{tasks[0].suite!r} on line 1; one suite per file")
            tasks.append(task)
    if not tasks:
        raise DatasetError(f"{path}: no tasks")
    return SuiteBuild(tasks=tasks if size is None else tasks[:size], rows_loaded=len(tasks))
