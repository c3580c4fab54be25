"""Start-up smoke test: three gates the judge must pass before its scores are used.

1. ``single_token_answers``: the template's "yes" and "no" strings are one token each, and
   different tokens (otherwise logit("yes") - logit("no") is not the answer's log-odds).
2. ``tokenisation_boundaries``: the rendered prompt tokenises exactly as the concatenation
   of its parts (prefix, query part, document part); a merge across a boundary would make
   the batch path (which decodes the parts separately) score a different token sequence
   than the text says.
3. ``fixture_gap``: the instruction's matching fixture beats its non-matching fixture by
   more than ``min_gap`` logits (batch path). Instructions with ``fixture="none"`` skip it.

A failed gate raises ``SmokeTestError`` naming the gate and its measured values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from junction.judge.errors import SmokeTestError
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction

__all__ = ["GateResult", "SmokeReport", "run_smoke"]

_PROBE = ("Which probe query is this?", "This is the probe document.")
"""Texts used for gate 2 when the instruction has no fixture."""


@dataclass(frozen=True)
class GateResult:
    """One gate: its name, whether it passed, what was measured, and a one-line message."""

    name: str
    passed: bool
    measured: dict[str, Any] = field(default_factory=dict)
    message: str = ""


@dataclass(frozen=True)
class SmokeReport:
    """All gates, in order; ``passed`` when every gate passed."""

    gates: list[GateResult]
    model_hash: str
    instruction_hash: str
    template: str

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)


def _gate_answers(judge) -> GateResult:
    yes, no = judge.answer_tokens()
    measured = {"yes": judge.template.yes, "yes_tokens": yes,
                "no": judge.template.no, "no_tokens": no}
    ok = len(yes) == 1 and len(no) == 1 and yes != no
    msg = "one token each" if ok else (
        f"{judge.template.yes!r} -> {len(yes)} tokens, {judge.template.no!r} -> {len(no)} tokens"
        + ("; same token" if yes == no else ""))
    return GateResult("single_token_answers", ok, measured, msg)


def _gate_boundaries(judge, instruction: RerankInstruction) -> GateResult:
    fixture = instruction.fixture
    query, document = (fixture.query, fixture.matching) if fixture != "none" else _PROBE
    template = judge.template
    whole = judge.tokenize(template.render(instruction, query, document), bos=True, special=True)
    parts = (judge.prefix_tokens(instruction) + judge.query_tokens(query)[0]
             + judge.document_tokens(document)[0])
    measured: dict[str, Any] = {"whole_tokens": len(whole), "parts_tokens": len(parts)}
    if whole == parts:
        return GateResult("tokenisation_boundaries", True, measured, "parts tokenise as the whole")
    # the two lists may differ in length: the first mismatch may be where one ends
    at = next((i for i, (a, b) in enumerate(zip(whole, parts, strict=False)) if a != b),
              min(len(whole), len(parts)))
    measured["first_mismatch"] = at
    measured["whole_pieces"] = [judge.piece(t) for t in whole[max(0, at - 2): at + 3]]
    measured["parts_pieces"] = [judge.piece(t) for t in parts[max(0, at - 2): at + 3]]
    return GateResult("tokenisation_boundaries", False, measured,
                      f"token {at} differs: whole {measured['whole_pieces']} vs parts "
                      f"{measured['parts_pieces']}")


def _gate_gap(judge, instruction: RerankInstruction) -> GateResult:
    fixture = instruction.fixture
    if fixture == "none":
        return GateResult("fixture_gap", True, {"fixture": "none"}, "skipped: fixture is none")
    match, other = judge.score(fixture.query, [fixture.matching, fixture.non_matching],
                               instruction).scores
    gap = match - other
    measured = {"matching": round(match, 4), "non_matching": round(other, 4),
                "gap": round(gap, 4), "min_gap": fixture.min_gap}
    ok = gap > fixture.min_gap
    return GateResult("fixture_gap", ok, measured,
                      f"gap {gap:.3f} {'>' if ok else '<='} min_gap {fixture.min_gap}")


def run_smoke(judge, instruction: RerankInstruction = RETRIEVAL_INSTRUCTION,
              raise_on_failure: bool = True) -> SmokeReport:
    """Run the three gates on ``judge`` (a ``LlamaJudge``) for ``instruction``.

    Gate 3 runs only when gates 1 and 2 pass (its score would be meaningless otherwise) and
    is skipped (passed, marked) for a ``vocab_only`` judge, which cannot score.
    Raises ``SmokeTestError`` for the first failed gate when ``raise_on_failure``.
    """
    gates = [_gate_answers(judge), _gate_boundaries(judge, instruction)]
    if judge.config.vocab_only:
        gates.append(GateResult("fixture_gap", True, {"vocab_only": True},
                                "skipped: the judge was loaded with vocab_only"))
    elif all(g.passed for g in gates):
        gates.append(_gate_gap(judge, instruction))
    report = SmokeReport(gates=gates, model_hash=judge.model_hash,
                         instruction_hash=judge.instruction_hash(instruction),
                         template=judge.template.name)
    if raise_on_failure:
        for gate in gates:
            if not gate.passed:
                raise SmokeTestError(gate.name, gate.message, gate.measured)
    return report
