"""Prompt templates of the judge: where the instruction, query and document go.

A rendered prompt is ``prefix + query part + document part``; the answer ("yes" or "no")
is the next token. The prefix (system line, instruction, few-shot examples) is shared by
every candidate of every query, the query part by every candidate of one query, and the
document part is each candidate's own. Each part is ``before + lead + text + after``: the
literals ``before``/``after`` may hold special tokens; the user text (with its ``lead``
space) is tokenised with special-token parsing *off*, so a document cannot inject
``<|im_end|>``. User text is whitespace-normalised (runs of whitespace become one space)
so no newline in a document can merge with the template's newlines.

Two layouts:

- ``qwen3_reranker``: the Qwen3-Reranker chat layout (system line, ``<Instruct>``,
  ``<Query>``, ``<Document>``, empty think block), from the Qwen3-Reranker model card
  (Qwen team, 2025), for reranker and instruct models.
- ``few_shot``: a completion layout for base models: an instruction line and four worked
  examples in the shared prefix (free per candidate), then ``Query:``/``Document:``/``Answer:``.
  Worked examples widen a base model's yes/no gap on the smoke fixture (docs/measurement.md,
  "Judge quality").

``choose_template`` picks from GGUF metadata by model family (``general.architecture``)
from ``TEMPLATE_BY_FAMILY``, a table measured by ``bench/studies/judge_quality.py --layouts``
(negation-pair accuracy and bfcl-memory AUC per layout; results in ``docs/measurement.md``);
a model whose name says "reranker" gets ``qwen3_reranker``, the layout its model card
defines; an unmeasured family gets ``few_shot``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from junction.errors import UnknownNameError
from junction.judge.instructions import RerankInstruction

__all__ = [
    "TEMPLATES",
    "TEMPLATE_BY_FAMILY",
    "FewShotExample",
    "PromptTemplate",
    "choose_template",
    "get_template",
    "normalise_text",
]

_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Collapse whitespace runs to one space and strip (see the module docstring)."""
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class FewShotExample:
    """One worked example of the few-shot layout."""

    query: str
    document: str
    answer: bool


DEFAULT_EXAMPLES: tuple[FewShotExample, ...] = (
    FewShotExample("How do I reset my password?",
                   "To reset your password, open Settings, choose Security and click Reset "
                   "password.", True),
    FewShotExample("Book a flight from Boston to Denver on 3 May.",
                   "Tool get_weather: returns the weather forecast for a city.", False),
    FewShotExample("Book a flight from Boston to Denver on 3 May.",
                   "Tool search_flights: finds flights between two airports on a date.", True),
    FewShotExample("How do I reset my password?",
                   "Our office is closed on public holidays and reopens the next working day.",
                   False),
)
"""Four worked examples (yes, no, yes, no): documents and tools, relevant and not."""


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt layout (see the module docstring).

    ``yes``/``no`` are the answer strings exactly as the next token must spell them
    (the smoke gate checks each is one token).
    """

    name: str
    prefix_format: str
    query_before: str
    query_after: str
    doc_before: str
    doc_after: str
    yes: str
    no: str
    lead: str = " "
    examples: tuple[FewShotExample, ...] = ()

    def prefix(self, instruction: RerankInstruction) -> str:
        """The shared prefix for ``instruction`` (examples rendered in the final layout)."""
        shots = "".join(
            self.query_part(ex.query) + self.document_part(ex.document)
            + (self.yes if ex.answer else self.no) + "\n\n"
            for ex in self.examples
        )
        return self.prefix_format.format(instruction=instruction.text, examples=shots)

    def query_part(self, query: str) -> str:
        return f"{self.query_before}{self.lead}{normalise_text(query)}{self.query_after}"

    def document_part(self, document: str) -> str:
        return f"{self.doc_before}{self.lead}{normalise_text(document)}{self.doc_after}"

    def render(self, instruction: RerankInstruction, query: str, document: str) -> str:
        """The whole prompt up to the answer position."""
        return self.prefix(instruction) + self.query_part(query) + self.document_part(document)

    def prompt_hash(self, instruction: RerankInstruction) -> str:
        """sha256 (hex) of everything that shapes a prompt: template parts, answer strings and
        the rendered prefix (so it changes with the instruction line and the examples)."""
        payload = json.dumps(
            [self.name, self.prefix(instruction), self.query_before, self.query_after,
             self.doc_before, self.doc_after, self.yes, self.no, self.lead],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_QWEN_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".'
)

QWEN3_RERANKER = PromptTemplate(
    name="qwen3_reranker",
    prefix_format=(
        "<|im_start|>system\n" + _QWEN_SYSTEM + "<|im_end|>\n<|im_start|>user\n"
        "<Instruct>: {instruction}\n"
    ),
    query_before="<Query>:",
    query_after="\n",
    doc_before="<Document>:",
    doc_after="<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    yes="yes",
    no="no",
)

FEW_SHOT = PromptTemplate(
    name="few_shot",
    prefix_format=(
        'Judge whether the Document meets the requirement of the Query under the Instruct. '
        'The Answer is "yes" or "no".\nInstruct: {instruction}\n\n{examples}'
    ),
    query_before="Query:",
    query_after="\n",
    doc_before="Document:",
    doc_after="\nAnswer:",
    yes=" yes",
    no=" no",
    examples=DEFAULT_EXAMPLES,
)

TEMPLATES: dict[str, PromptTemplate] = {t.name: t for t in (QWEN3_RERANKER, FEW_SHOT)}


def get_template(name: str) -> PromptTemplate:
    """The template named ``name``; ``UnknownNameError`` listing valid names otherwise."""
    try:
        return TEMPLATES[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown judge template {name!r}; valid templates: {', '.join(sorted(TEMPLATES))}"
        ) from None


TEMPLATE_BY_FAMILY: dict[str, str] = {
    "gemma3": "few_shot",
    "qwen2": "few_shot",
    "qwen3": "few_shot",
}
"""Layout per GGUF ``general.architecture``, the best measured per family (docs/measurement.md,
"Judge quality"; ``bench/studies/judge_quality.py --layouts`` re-measures)."""


def choose_template(metadata: Mapping[str, str]) -> PromptTemplate:
    """Pick a layout from GGUF metadata (rule in the module docstring)."""
    name = (metadata.get("general.name", "") + " " + metadata.get("general.basename", "")).lower()
    if "rerank" in name:
        return QWEN3_RERANKER
    return TEMPLATES[TEMPLATE_BY_FAMILY.get(metadata.get("general.architecture", ""), "few_shot")]
