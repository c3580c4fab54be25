"""llama.cpp's Python binding, imported on first use, with its log routed to Python logging
(``llama_cpp_module``)."""

from __future__ import annotations

import logging

from junction.judge.errors import JudgeError

__all__ = ["llama_cpp_module"]

_LOG_CALLBACK = None


def llama_cpp_module():
    """The ``llama_cpp`` module, its log routed (once per process) to the logger
    ``junction.judge.llama_cpp`` at DEBUG. Raises ``JudgeError`` when llama-cpp-python is
    not installed."""
    global _LOG_CALLBACK
    try:
        import ctypes

        import llama_cpp
    except ImportError as exc:
        raise JudgeError(
            "llama-cpp-python is not installed; run `make setup` (it builds the wheel from source)"
        ) from exc
    if _LOG_CALLBACK is None:
        # llama.cpp prints load-time notices on stderr (for Gemma 3, at error level: a note
        # that '</s>' is not a control token; at warning level: the full-size SWA cache).
        # Route all of it to Python logging at DEBUG ("junction.judge.llama_cpp"); a real
        # failure surfaces as a null model/context, which raises JudgeError.
        log = logging.getLogger("junction.judge.llama_cpp")

        @llama_cpp.llama_log_callback
        def _on_log(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            log.debug("[%d] %s", level, text.decode("utf-8", "replace").rstrip())

        _LOG_CALLBACK = _on_log  # keep a reference: llama.cpp holds only the pointer
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
    return llama_cpp
