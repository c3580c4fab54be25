"""``junction judge``: the judge lane's commands (mounted by ``flows.cli``).

Each command loads the judge with the ``judge_admission`` strategy's settings (default
model: the embedded Qwen2.5-Coder-0.5B-Instruct; ``--model`` takes an embedded model name
or a GGUF path):

- ``junction judge smoke``: the three start-up gates and what each measured; exit 0 when
  every gate passes, 1 otherwise (the failed gate is named on stderr);
- ``junction judge score "QUERY" DOC [DOC ...]``: each document's score (logits), rank,
  ties within the noise floor, truncations and skipped documents, with the model and
  instruction hashes (``--json``: one object, ``scores`` in input order);
- ``junction judge noise``: measure the noise floor of the configured model and KV type
  and store it with the model hash (``junction.judge.noise``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, cast

import typer

from flows.cli_text import echo, json_text, require_text, require_text_content

if TYPE_CHECKING:
    from junction.pages.admission import ScoredResource

judge_app = typer.Typer(no_args_is_help=True, help="The yes/no judge (admission lane).")


@judge_app.callback()
def _judge() -> None:
    """The yes/no judge (admission lane)."""  # a callback keeps `smoke` a sub-command


MODEL_OPTION = typer.Option(None, "--model", help="Embedded model name or GGUF file "
                                                   "(default: the embedded default).")
TEMPLATE_OPTION = typer.Option("auto", "--template", help="auto | few_shot | qwen3_reranker")
KV_OPTION = typer.Option("q8_0", "--kv-type", help="KV cache type: f16 | q8_0 | q4_0")


def _load(model: str | None, template: str, kv_type: str):
    """The judge the benchmark uses (the strategy's config), with the options applied.

    Raises ``JunctionError`` (one line at the CLI) for an unknown model, template or KV type.
    """
    from pydantic import ValidationError

    from junction.errors import JunctionError
    from junction.judge import JudgeConfig, load_judge
    from junction.models import EMBEDDED_MODELS, resolve_model_path
    from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG

    fields = {**STRATEGY_JUDGE_CONFIG.model_dump(), "template": template, "kv_type": kv_type}
    if model in EMBEDDED_MODELS:
        fields["embedded"] = model
    elif model is not None:
        fields["model_path"] = resolve_model_path(model)
    try:
        config = JudgeConfig(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise JunctionError(f"--{'-'.join(map(str, first['loc'])).replace('_', '-')}: "
                            f"{first['msg']}") from None
    return load_judge(config)


@judge_app.command("smoke")
def smoke(
    model: str | None = MODEL_OPTION,
    template: str = TEMPLATE_OPTION,
    kv_type: str = KV_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run the judge's start-up smoke gates and print what each measured."""
    from junction.judge import run_smoke

    judge = _load(model, template, kv_type)
    report = run_smoke(judge, raise_on_failure=False)
    payload = {
        "passed": report.passed,
        "model": str(judge.model_path),
        "model_hash": report.model_hash,
        "instruction_hash": report.instruction_hash,
        "template": report.template,
        "kv_type": kv_type,
        "gates": [{"name": g.name, "passed": g.passed, "measured": g.measured,
                   "message": g.message} for g in report.gates],
    }
    if as_json:
        typer.echo(json.dumps(payload, sort_keys=True))
    else:
        typer.echo(f"model {payload['model']} (sha256 {report.model_hash[:12]}), "
                   f"template {report.template}, kv {kv_type}")
        for gate in report.gates:
            typer.echo(f"{'PASS' if gate.passed else 'FAIL'} {gate.name}: {gate.message} "
                       f"{json.dumps(gate.measured, sort_keys=True)}")
    if not report.passed:
        failed = next(g for g in report.gates if not g.passed)
        typer.echo(f"error: smoke gate {failed.name!r} failed: {failed.message}", err=True)
        sys.exit(1)


@judge_app.command("score")
def score(
    query: str = typer.Argument(..., help="The query (request) the documents are judged against."),
    documents: list[str] = typer.Argument(..., help="Documents (texts) to judge."),
    model: str | None = MODEL_OPTION,
    template: str = TEMPLATE_OPTION,
    kv_type: str = KV_OPTION,
    instruction: str | None = typer.Option(None, "--instruction",
                                           help="Instruction line (default: retrieval)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Ask the judge directly: each document's score (logits), rank, ties, cuts, skips."""
    from junction.errors import JunctionError
    from junction.judge import RETRIEVAL_INSTRUCTION, RerankInstruction
    from junction.judge.cache import judge_documents
    from junction.judge.noise import noise_floor
    from junction.pages.admission import tie_groups

    require_text(query, "QUERY")
    require_text_content(query, "QUERY")
    for i, doc in enumerate(documents):
        require_text_content(doc, f"DOCUMENT {i + 1}")
    if instruction is None:
        rule = RETRIEVAL_INSTRUCTION
    else:
        try:
            rule = RerankInstruction(text=instruction, fixture="none")
        except ValueError:
            raise JunctionError(f"--instruction must be one non-empty line, got "
                                f"{instruction!r}") from None
    judge = _load(model, template, kv_type)
    floor = noise_floor(judge).floor
    batch = judge_documents(judge, None, query, documents, rule, floor)
    scored = [i for i, s in enumerate(batch.scores) if s is not None]

    class _Item:  # tie_groups orders ScoredResource-like items by score, then id
        def __init__(self, i: int) -> None:
            self.score, self.resource_id = batch.scores[i], f"{i:06d}"

    # tie_groups reads only .score and .resource_id of its items
    groups = tie_groups(cast("list[ScoredResource]", [_Item(i) for i in scored]), floor)
    rank: dict[int, int] = {}
    tie_of: dict[int, list[int]] = {}
    for group in groups:
        members = [int(item.resource_id) for item in group]
        for item in group:
            i = int(item.resource_id)
            rank[i] = len(rank) + 1
            tie_of[i] = [m for m in members if m != i]
    rows: list[dict[str, Any]] = []
    for i, doc in enumerate(documents):
        cut = batch.truncations.get(i)
        doc_score = batch.scores[i]
        rows.append({"index": i, "document": doc, "status": batch.statuses[i],
                     "score": None if doc_score is None else round(doc_score, 4),
                     "rank": rank.get(i), "tied_with": tie_of.get(i, []),
                     "truncated": None if cut is None else {"original_tokens": cut[0],
                                                             "kept_tokens": cut[1]}})
    payload = {"query": query, "model": str(judge.model_path), "model_hash": judge.model_hash,
               "template": judge.template.name, "instruction_hash": judge.instruction_hash(rule),
               "kv_type": judge.config.kv_type, "noise_floor": floor,
               "degenerate": batch.degenerate, "scores": rows}
    if as_json:
        typer.echo(json_text(payload))
        return
    echo(f"model {payload['model']} (sha256 {judge.model_hash[:12]}), template "
         f"{payload['template']}, instruction {payload['instruction_hash'][:12]}, "
         f"noise floor {floor} logits")
    for r in sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["index"])):
        text = r["document"] if len(r["document"]) <= 70 else r["document"][:67] + "..."
        if r["status"] != "scored":
            echo(f"   -  skipped ({r['status']})  [{r['index']}] {text!r}")
            continue
        notes = []
        if r["tied_with"]:
            notes.append("tie with " + ", ".join(f"[{j}]" for j in r["tied_with"]))
        if r["truncated"]:
            notes.append(f"cut {r['truncated']['original_tokens']}->"
                         f"{r['truncated']['kept_tokens']} tokens")
        echo(f"{r['rank']:>4}  {r['score']:+8.4f}  [{r['index']}] {text}"
             + (f"  ({'; '.join(notes)})" if notes else ""))
    if batch.degenerate:
        typer.echo("warning: every score lies within the noise floor: the judge told these "
                   "documents apart by nothing", err=True)


@judge_app.command("noise")
def noise(
    model: str | None = MODEL_OPTION,
    template: str = TEMPLATE_OPTION,
    kv_type: str = KV_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Measure the noise floor of the model and KV type; store it with the model hash."""
    from dataclasses import asdict

    from junction.judge.noise import measure_noise_floor

    result = measure_noise_floor(_load(model, template, kv_type))
    if as_json:
        typer.echo(json.dumps(asdict(result), sort_keys=True))
    else:
        typer.echo(f"noise floor {result.floor} logits (slot spread {result.slot_spread}, "
                   f"batch vs one-pair {result.batch_naive_gap}; model "
                   f"{result.model_hash[:12]}, kv {result.kv_type}); stored")
