"""``junction judge``: the judge lane's commands (mounted by ``flows.cli``).

``junction judge smoke`` loads the judge (default: the embedded Gemma 3 270M, with the
``judge_admission`` strategy's settings), runs the three start-up gates and prints each gate's measured values; exit status 0 when every gate
passes, 1 otherwise (the failed gate is named on stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

judge_app = typer.Typer(no_args_is_help=True, help="The yes/no judge (admission lane).")


@judge_app.callback()
def _judge() -> None:
    """The yes/no judge (admission lane)."""  # a callback keeps `smoke` a sub-command


@judge_app.command("smoke")
def smoke(
    model: Path | None = typer.Option(None, "--model", help="GGUF file (default: embedded)."),
    template: str = typer.Option("auto", "--template", help="auto | few_shot | qwen3_reranker"),
    kv_type: str = typer.Option("q8_0", "--kv-type", help="KV cache type: f16 | q8_0 | q4_0"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run the judge's start-up smoke gates and print what each measured."""
    from junction.judge import JudgeConfig, load_judge, run_smoke
    from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG

    # the strategy's config, so the gates check the judge the benchmark uses
    config = JudgeConfig(**{**STRATEGY_JUDGE_CONFIG.model_dump(), "model_path": model,
                            "template": template, "kv_type": kv_type})
    judge = load_judge(config)
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
