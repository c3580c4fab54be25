"""Token prices per script against the default model's own tokenizer.

Tokenizes the fixed sample ``bench/data/token_scripts.json`` (Latin, Cyrillic, Greek,
Arabic, Hebrew, CJK, Thai, Devanagari) with the default model's tokenizer (the embedded
Qwen2.5 GGUF, assembled by ``junction models assemble``, loaded vocab-only through
llama-cpp-python: no weights) and prints, per script, the real token count and the ratio
counted / real of the previous rule (``approx-gemma3``, fitted to Gemma 3's tokenizer,
kept below for this comparison) and of ``junction.tokens.DEFAULT_TOKEN_COUNTER``, over the
whole sample and per sentence (min, max); then the same for what the suites price most,
BFCL's tool schemas (as ``render_tool_schema`` renders them; 40 ``bfcl-multiple`` tasks)
and BFCL memory turns (5 ``bfcl-memory`` tasks). ``--json`` prints one object.
``--held-out`` prints the same per language for ``bench/data/token_heldout.json``, the
sentences the rates were not fitted on (the bound ``junction.tokens`` states), and the
per-sentence extremes over all of them.

    python bench/studies/token_prices.py [--json] [--held-out] [--model NAME|PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402

from junction.models import resolve_model_path  # noqa: E402
from junction.text import CJK_CHARS, THAI_CHARS  # noqa: E402
from junction.tokens import DEFAULT_TOKEN_COUNTER  # noqa: E402

SAMPLE = ROOT / "bench" / "data" / "token_scripts.json"
HELD_OUT = ROOT / "bench" / "data" / "token_heldout.json"

_GEMMA_RUN = re.compile(
    rf"([{CJK_CHARS}]+)|([{THAI_CHARS}]+)|([^\W{CJK_CHARS}{THAI_CHARS}]+)|([^\w\s]+)")
_GEMMA_RATES = (Fraction(3, 5), Fraction(1, 3), Fraction(1, 8), Fraction(1, 3))


def gemma_rule(text: str) -> int:
    """The counter before this measurement (``approx-gemma3``): CJK 3/5, Thai 1/3, other
    words 1/8, punctuation 1/3 tokens per character, ceil per run."""
    return sum(math.ceil(len(run) * rate) for groups in _GEMMA_RUN.findall(text)
               for run, rate in zip(groups, _GEMMA_RATES, strict=False) if run)


def load_sample(path: Path = SAMPLE) -> dict[str, list[str]]:
    """Script (or language) -> sentences of the fixed sample at ``path``."""
    return {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items()
            if not k.startswith("_")}


def tokenizer(model: str | None = None):
    """``text -> tokens`` of the model's own tokenizer (vocab-only llama.cpp load)."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(resolve_model_path(model)), vocab_only=True, verbose=False)
    return lambda text: len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def ratios(sample: dict[str, list[str]], real, counters: dict) -> dict[str, dict]:
    """Per script: real tokens, and per counter the total ratio and per-sentence extremes."""
    out = {}
    for script, texts in sample.items():
        truth = [real(t) for t in texts]
        row = {"sentences": len(texts), "real_tokens": sum(truth)}
        for name, count in counters.items():
            counted = [count(t) for t in texts]
            per = [c / r for c, r in zip(counted, truth, strict=False)]
            row[name] = {"tokens": sum(counted), "ratio": round(sum(counted) / sum(truth), 3),
                         "min": round(min(per), 3), "max": round(max(per), 3)}
        out[script] = row
    return out


def bfcl_sample() -> dict[str, list[str]]:
    """BFCL's own text, read from the installed ``bfcl-eval`` data: rendered tool schemas
    and memory contexts (the rows of ``ratios`` after the scripts)."""
    from junction_datasets.bfcl import memory_suite, multiple_suite

    from junction.tokens import render_tool_schema

    schemas = {t.id: render_tool_schema(t.id, t.description, t.json_schema)
               for task in multiple_suite(size=40).tasks for t in task.tools}
    memory = [c.content for task in memory_suite(size=5).tasks for c in task.contexts]
    return {"bfcl schemas": list(schemas.values()), "bfcl memory": memory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--model", default=None, help="embedded model name or GGUF path")
    parser.add_argument("--held-out", action="store_true",
                        help="the held-out sentences (bench/data/token_heldout.json) instead")
    args = parser.parse_args()
    counters = {"approx-gemma3 (before)": gemma_rule,
                f"{DEFAULT_TOKEN_COUNTER.name} (after)": DEFAULT_TOKEN_COUNTER.count}
    if args.held_out:
        counters = {DEFAULT_TOKEN_COUNTER.name: DEFAULT_TOKEN_COUNTER.count}
    sample = load_sample(HELD_OUT) if args.held_out else {**load_sample(), **bfcl_sample()}
    table = ratios(sample, tokenizer(args.model), counters)
    write_results(__file__, {"sample": "held-out" if args.held_out else "fitted", "ratios": table})
    if args.json:
        print(json.dumps(table, sort_keys=True))
        return
    names = list(counters)
    print(f"{'script':<13} {'real':>6}  " + "  ".join(f"{n:>34}" for n in names))
    for script, row in table.items():
        cells = [f"{row[n]['ratio']:.2f} (sentences {row[n]['min']:.2f}-{row[n]['max']:.2f})"
                 for n in names]
        print(f"{script:<13} {row['real_tokens']:>6}  " + "  ".join(f"{c:>34}" for c in cells))
    if args.held_out:
        name = names[0]
        print(f"every sentence: {min(r[name]['min'] for r in table.values()):.2f}-"
              f"{max(r[name]['max'] for r in table.values()):.2f}")


if __name__ == "__main__":
    main()
