"""``junction admit PAGE``: the chunks of one HTML page admitted verbatim for a query.

Reads a local file or standard input (``-``); nothing is fetched. The page is chunked
(``junction.pages.chunking.chunk_page``), every chunk is judged against the query by the judge
the benchmark uses (``flows.cli_judge._load``: the embedded default model, or ``--model``),
reading the chunk's heading path then its text, and the best chunks are admitted whole,
top-K inside the token budget (``junction.pages.chunk_admission.admit_chunks``, the page
strategies' rule; defaults 5 chunks within 2,048 tokens: docs/suites.md, "Pages"). Explore
mode keeps each chunk's score against the query; ``--exploit --original TASK`` scores each
chunk against both and keeps the minimum (``junction.pages.admission.exploit_scores``). A
degenerate batch (every score within the judge's noise floor) admits nothing. Scores are
cached in ``state_dir()/judge_scores.sqlite``.

Output: each admitted chunk's rank, score (logits), tokens and heading path, then its
verbatim text; then the best rejected chunks and why (``top_k`` or ``budget``); ``--json``
prints one object instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import typer

from flows.cli_judge import KV_OPTION, MODEL_OPTION, TEMPLATE_OPTION
from flows.cli_text import echo, json_text, require_text, require_text_content

MAX_PAGE_BYTES = 16 * 1024 * 1024
"""Largest page read (bytes), as a suite file's line (``junction_datasets.jsonl``)."""


def _read_page(page: str) -> str:
    """The page's text from ``page`` (a path, or ``-`` for standard input), UTF-8.

    Raises ``JunctionError`` naming the page: missing, a folder, unreadable, over
    ``MAX_PAGE_BYTES``, not UTF-8 or binary (``require_text_content``).
    """
    from junction.errors import JunctionError

    if page == "-":
        data = sys.stdin.buffer.read(MAX_PAGE_BYTES + 1)
        name = "standard input"
    else:
        path = Path(page)
        if not path.exists():
            raise JunctionError(f"{page}: no such file")
        if path.is_dir():
            raise JunctionError(f"{page}: is a folder, not an HTML file")
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_PAGE_BYTES + 1)
        except OSError as exc:
            raise JunctionError(f"{page}: cannot be read: {exc.strerror or exc}") from None
        name = page
    if len(data) > MAX_PAGE_BYTES:
        raise JunctionError(f"{name}: larger than {MAX_PAGE_BYTES} bytes; the limit is "
                            f"{MAX_PAGE_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JunctionError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return require_text_content(text, name)


def _chunk_row(scored, text: str | None = None, **extra) -> dict:
    chunk = scored.chunk
    row = {"index": chunk.index, "heading_path": chunk.heading_path,
           "score": round(scored.score, 4), "tokens": chunk.token_cost,
           "start": chunk.start, "end": chunk.end, "cut": chunk.cut}
    if text is not None:
        row["text"] = text
    row.update(extra)
    return row


def admit(
    page: str = typer.Argument(..., help="HTML file, or - for standard input."),
    query: str = typer.Option(..., "--query", help="The question the chunks are judged against."),
    budget: int = typer.Option(2048, "--budget", help="Token budget of the admitted chunks."),
    top_k: int = typer.Option(5, "--top-k", help="At most this many chunks."),
    exploit: bool = typer.Option(False, "--exploit", help="Score min(query, --original)."),
    original: str | None = typer.Option(None, "--original",
                                        help="The original task (with --exploit)."),
    chunk_tokens: int = typer.Option(None, "--chunk-tokens",
                                     help="Largest chunk in tokens (default 400)."),
    rejected: int = typer.Option(3, "--rejected", help="Best rejected chunks shown."),
    model: str | None = MODEL_OPTION,
    template: str = TEMPLATE_OPTION,
    kv_type: str = KV_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Admit the best chunks of an HTML page for a query, verbatim, top-K within a budget."""
    from flows.cli_judge import _load
    from junction.errors import JunctionError
    from junction.judge import RETRIEVAL_INSTRUCTION
    from junction.judge.session import judge_session
    from junction.pages.chunk_admission import ScoredChunk, admit_chunks
    from junction.pages.chunking import DEFAULT_MAX_CHUNK_TOKENS, chunk_document, chunk_page
    from junction.strategies.page_admission import judge_page_documents

    require_text(query, "--query")
    if exploit and not (original or "").strip():
        raise JunctionError("--exploit needs --original TASK (the task the query serves)")
    if original is not None and not exploit:
        raise JunctionError("--original is used in exploit mode only; add --exploit")
    if rejected < 0:
        raise JunctionError(f"--rejected must be >= 0, got {rejected}")
    for option, value in (("--budget", budget), ("--top-k", top_k)):
        if value < 0:
            raise JunctionError(f"{option} must be >= 0, got {value}")
    html = _read_page(page)
    chunked = chunk_page(html, chunk_tokens or DEFAULT_MAX_CHUNK_TOKENS)
    name = "standard input" if page == "-" else page
    if not chunked.chunks:
        raise JunctionError(f"{name}: the page has no visible text")
    session = judge_session(_load(model, template, kv_type).config, (RETRIEVAL_INSTRUCTION,))
    judge, cache, floor = session.judge, session.cache, session.noise.floor
    judged = judge_page_documents(judge, cache, query,
                                  [chunk_document(c) for c in chunked.chunks],
                                  RETRIEVAL_INSTRUCTION, floor, original if exploit else None)
    scored = [ScoredChunk(c, s) for c, s in zip(chunked.chunks, judged.scores, strict=True)
              if s is not None]
    admitted = [] if judged.degenerate else admit_chunks(scored, top_k, budget, tie_logits=floor)
    taken = {a.chunk.index for a in admitted}
    ranked = sorted(scored, key=lambda s: (-s.score, s.chunk.index))
    best_rejected = [s for s in ranked if s.chunk.index not in taken][:rejected]
    n_within_k = min(top_k, len(ranked))

    def sides(index: int) -> dict:
        if not exploit:
            return {}
        # only scored chunks come here: both sides scored them
        return {"query_score": round(cast(float, judged.query_scores[index]), 4),
                "original_score": round(cast(float, judged.original_scores[index]), 4)}

    def why(item) -> str:
        if judged.degenerate:
            return "degenerate"
        return "budget" if ranked.index(item) < n_within_k else "top_k"

    payload = {
        "page": name, "query": query, "mode": "exploit" if exploit else "explore",
        "original": original if exploit else None, "budget": budget, "top_k": top_k,
        "chunks": len(chunked.chunks),
        "page_tokens": sum(c.token_cost for c in chunked.chunks),
        "model": str(judge.model_path), "model_hash": judge.model_hash,
        "instruction_hash": judge.instruction_hash(RETRIEVAL_INSTRUCTION),
        "noise_floor": floor, "degenerate": judged.degenerate,
        "admitted_tokens": sum(a.token_cost for a in admitted),
        "admitted": [_chunk_row(ScoredChunk(a.chunk, a.score), a.text, rank=i + 1,
                                truncated=a.truncated, tokens_admitted=a.token_cost,
                                **sides(a.chunk.index))
                     for i, a in enumerate(admitted)],
        "rejected": [_chunk_row(s, s.chunk.text, reason=why(s), **sides(s.chunk.index))
                     for s in best_rejected],
    }
    if as_json:
        typer.echo(json_text(payload))
        return
    echo(f"{name}: {payload['chunks']} chunks, {payload['page_tokens']} tokens; "
         f"{payload['mode']} mode; admitted {len(admitted)} chunks, "
         f"{payload['admitted_tokens']} of {budget} tokens (top-{top_k}); model "
         f"sha256 {judge.model_hash[:12]}, noise floor {floor} logits")
    for row in payload["admitted"]:
        cut = " (cut to fit)" if row["truncated"] else ""
        echo(f"\n[{row['rank']}] score {row['score']:+.4f}  {row['tokens_admitted']} "
             f"tokens{cut}  {row['heading_path'] or '(before any heading)'}")
        echo(row["text"])  # the page's own text: escaped, as everything printed
    if payload["rejected"]:
        typer.echo("\nbest rejected:")
        for row in payload["rejected"]:
            preview = " ".join(row["text"].split())
            preview = preview if len(preview) <= 60 else preview[:57] + "..."
            echo(f"  score {row['score']:+.4f}  {row['tokens']} tokens  {row['reason']}"
                 f"  {row['heading_path'] or '(before any heading)'}: {preview}")
    if judged.degenerate:
        typer.echo("warning: every score lies within the noise floor: the judge told these "
                   "chunks apart by nothing, so nothing is admitted", err=True)
