"""The judge's tokens: the model's vocabulary through llama.cpp (tokenize, pieces,
detokenize), the answer tokens, and a prompt's parts tokenised as the whole prompt
tokenises them (``PromptTokens``, a mixin of ``scorer.LlamaJudge``)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junction.judge.errors import JudgeError
from junction.judge.instructions import RerankInstruction
from junction.judge.templates import normalise_text

if TYPE_CHECKING:
    from junction.judge.model import JudgeConfig
    from junction.judge.templates import PromptTemplate

__all__ = ["PromptTokens"]


class PromptTokens:
    """Tokenising methods of ``LlamaJudge``; the judge provides ``_L`` (the llama.cpp
    module), ``_vocab``, ``_ctx``, ``_literal_splits`` (a dict), ``template``, ``config``
    and ``model_path``."""

    _L: Any  # the llama_cpp module (``junction.judge.llama.llama_cpp_module``)
    _vocab: Any  # a llama.cpp vocab pointer
    _ctx: Any  # a llama.cpp context pointer; None for a vocab-only judge
    _literal_splits: dict[str, tuple[str, str]]
    template: PromptTemplate
    config: JudgeConfig
    model_path: Path

    def tokenize(self, text: str, *, bos: bool = False, special: bool = False) -> list[int]:
        """Token ids of ``text``; ``bos`` adds the model's BOS token if it uses one,
        ``special`` parses special-token strings such as ``<|im_end|>``."""
        data = text.encode("utf-8")
        cap = len(data) + 16
        arr = (self._L.llama_token * cap)()
        n = self._L.llama_tokenize(self._vocab, data, len(data), arr, cap, bos, special)
        if n < 0:
            raise JudgeError(f"tokenising {len(data)} bytes needs {-n} tokens > buffer {cap}")
        return list(arr[:n])

    def piece(self, token: int) -> str:
        """The text of one token (special tokens rendered)."""
        buf = ctypes.create_string_buffer(256)
        n = self._L.llama_token_to_piece(self._vocab, token, buf, 256, 0, True)
        return buf.raw[: max(n, 0)].decode("utf-8", "replace")

    def answer_tokens(self) -> tuple[list[int], list[int]]:
        """Token ids of the template's "yes" and "no" strings (the smoke gate wants one each)."""
        return (self.tokenize(self.template.yes), self.tokenize(self.template.no))

    def _answer_ids(self) -> tuple[int, int]:
        if self._ctx is None:
            raise JudgeError(f"{self.model_path} was loaded with vocab_only: it tokenises, "
                             "it cannot score")
        yes, no = self.answer_tokens()
        if len(yes) != 1 or len(no) != 1:
            raise JudgeError(
                f"answer strings must be single tokens: {self.template.yes!r} -> {yes}, "
                f"{self.template.no!r} -> {no}"
            )
        return yes[0], no[0]

    def prefix_tokens(self, instruction: RerankInstruction) -> list[int]:
        """Tokens of the shared prefix (with BOS)."""
        return self.tokenize(self.template.prefix(instruction), bos=True, special=True)

    def _is_special(self, token: int) -> bool:
        attr = self._L.llama_vocab_get_attr(self._vocab, token)
        return bool(attr & (self._L.LLAMA_TOKEN_ATTR_CONTROL
                            | self._L.LLAMA_TOKEN_ATTR_USER_DEFINED))

    def _split_literal(self, literal: str) -> tuple[str, str]:
        """``literal`` as (plain head, rest): the head is the text before its first special
        token (tokenised together with the user text before it), the rest starts there."""
        cached = self._literal_splits.get(literal)
        if cached is None:
            head = ""
            for tok in self.tokenize(literal, special=True):
                if self._is_special(tok):
                    break
                head += self.piece(tok)
            if not literal.startswith(head):  # a piece that does not spell its text
                head = ""
            cached = self._literal_splits[literal] = (head, literal[len(head):])
        return cached

    def detokenize(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens`` (bytes of their pieces; a split UTF-8 tail is dropped)."""
        out = bytearray()
        buf = ctypes.create_string_buffer(256)
        for tok in tokens:
            n = self._L.llama_token_to_piece(self._vocab, tok, buf, 256, 0, False)
            out += buf.raw[: max(n, 0)]
        return out.decode("utf-8", "ignore")

    def _part_tokens(self, before: str, text: str, after: str,
                     limit: int) -> tuple[list[int], int]:
        """Tokens of ``before + lead + text + after`` as the whole prompt tokenises them.

        The user text (special-token parsing off) is tokenised together with the plain head
        of the literal after it, so a merge across that boundary ("?" + "\n" -> "?\n" in
        Qwen's tokenizer) happens here as in the whole prompt. A text longer than ``limit``
        tokens is cut to its first ``limit`` tokens first (returned: the uncut length).
        """
        head, rest = self._split_literal(after)
        user = self.template.lead + normalise_text(text)
        n = len(self.tokenize(user))
        if n > limit:
            user = self.detokenize(self.tokenize(user)[:limit])
        return (self.tokenize(before, special=True) + self.tokenize(user + head)
                + (self.tokenize(rest, special=True) if rest else []), n)

    def query_tokens(self, query: str) -> tuple[list[int], int]:
        """Tokens of the query part (text cut to ``max_query_tokens``) and the uncut length."""
        t = self.template
        return self._part_tokens(t.query_before, query, t.query_after,
                                 self.config.max_query_tokens)

    def document_tokens(self, document: str) -> tuple[list[int], int]:
        """Tokens of the document part; only the document text is cut (the answer suffix stays)."""
        t = self.template
        return self._part_tokens(t.doc_before, document, t.doc_after,
                                 self.config.max_document_tokens)
