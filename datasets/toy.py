"""Toy suites: the hand-made *coupling* task and a seeded *synthetic* generator.

Both are deterministic: the same parameters and seed give the same tasks, byte for byte
(``random.Random`` seeded with a string is stable across platforms and Python versions
3.2+, see the ``random.seed`` docs).
"""

from __future__ import annotations

import math
import random
from typing import cast

from junction.budget import Budget
from junction.resources import ContextResource, SourceKind, ToolResource
from junction.tasks import BenchmarkTask, Interaction, VerifierSpec

__all__ = ["coupling_suite", "coupling_task", "synthetic_suite"]

_POLICY = (
    "Contractor reimbursement policy. Contractors are not employees and are never paid "
    "through payroll. Any cost a contractor incurs for a project, such as travel or "
    "equipment, is reimbursed as an expense claim with the receipt attached."
)
_GENERIC = (
    "Paying people at Acme. Salaries, bonuses and reimbursement of costs are paid to "
    "people on the payroll schedule at the end of each month. Ask finance when in doubt "
    "about how to pay someone back."
)


def coupling_task() -> BenchmarkTask:
    """The coupling task: the policy decides between the expense and the payroll tool.

    Unary priors (independent relevance): generic text 0.6 > policy 0.5, payroll 0.7 >
    expense 0.4. Pair scores: policy with expense +1.0 (0.8 + 0.2 over both orders),
    policy with payroll -1.0. The token budget is the largest context plus the largest
    tool schema, and at most one tool. Worked out: generic+payroll = 1.3 is the best unary
    total (the adaptive split's pick: the wrong tool); the fixed 50/50 split cannot fit a
    tool schema in its half and exposes the generic text alone; policy+expense = 0.9 + 1.0
    = 1.9 is the joint optimum, and the only verified set.
    """
    contexts = (
        ContextResource.from_text("contractor-policy", _POLICY, SourceKind.POLICY),
        ContextResource.from_text("pay-people-guide", _GENERIC, SourceKind.OTHER),
    )
    expense_schema = {
        "type": "object",
        "properties": {
            "payee": {"type": "string", "description": "Who is paid back"},
            "amount_usd": {"type": "number", "description": "Amount in USD"},
            "receipt_id": {"type": "string"},
        },
        "required": ["payee", "amount_usd"],
    }
    payroll_schema = {
        "type": "object",
        "properties": {
            "employee_id": {"type": "string"},
            "amount_usd": {"type": "number", "description": "Gross amount in USD"},
        },
        "required": ["employee_id", "amount_usd"],
    }
    tools = (
        ToolResource.from_schema(
            "submit_expense", "Submit an expense claim to pay back a cost.", expense_schema,
            estimated_latency_ms=300.0, estimated_cost_usd=0.001,
        ),
        ToolResource.from_schema(
            "run_payroll", "Add a payment for a person to the next payroll run.", payroll_schema,
            estimated_latency_ms=500.0, estimated_cost_usd=0.002,
        ),
    )
    # One context and one tool fit; two contexts plus a tool do not.
    max_tokens = max(c.token_cost for c in contexts) + max(t.token_cost for t in tools)
    return BenchmarkTask(
        task_id="coupling-contractor-laptop",
        suite="coupling",
        objective="Pay back Dana, a contractor, for the 420 USD laptop she bought for the project.",
        contexts=contexts,
        tools=tools,
        budget=Budget(max_tokens=max_tokens, max_tools=1),
        initial_state={"payee": "Dana", "amount_usd": 420},
        unary={
            "pay-people-guide": 0.6,
            "contractor-policy": 0.5,
            "run_payroll": 0.7,
            "submit_expense": 0.4,
        },
        interactions=(
            Interaction(source="contractor-policy", target="submit_expense", weight=0.8),
            Interaction(source="submit_expense", target="contractor-policy", weight=0.2),
            Interaction(source="contractor-policy", target="run_payroll", weight=-1.0),
        ),
        gold_context_ids=("contractor-policy",),
        gold_tool_ids=("submit_expense",),
        verifier=VerifierSpec(
            kind="toy_calls",
            params={"steps": [{"tool": "submit_expense", "requires": ["contractor-policy"],
                               "fallback": "run_payroll"}]},
        ),
    )


def coupling_suite(seed: int = 0, size: int | None = None) -> list[BenchmarkTask]:
    """The coupling suite: one task (``seed`` and ``size`` accepted for a uniform signature)."""
    return [coupling_task()]


_TOPICS = [
    "invoice", "refund", "contract", "travel", "laptop", "payroll", "expense", "vendor",
    "audit", "tax", "shipping", "warranty", "customer", "ticket", "deploy", "database",
    "backup", "calendar", "meeting", "report", "budget", "approval", "onboarding", "access",
    "password", "incident", "release", "license", "inventory", "order",
]
_FILLER = ["the", "team", "must", "record", "each", "request", "before", "review", "and", "send"]


def _text(rng: random.Random, topics: list[str], length: int) -> str:
    words = [rng.choice(topics) if rng.random() < 0.3 else rng.choice(_FILLER)
             for _ in range(length)]
    return " ".join(words)


def synthetic_suite(
    seed: int = 0,
    size: int | None = 20,
    n_contexts: int = 6,
    n_tools: int = 6,
    density: float = 0.2,
    positive_fraction: float = 0.5,
    context_tokens: tuple[int, int] = (40, 200),
    tool_latency_ms: tuple[float, float] = (50.0, 2000.0),
    tool_cost_usd: tuple[float, float] = (0.0, 0.01),
    tightness: float = 0.4,
    suite: str = "synthetic",
) -> list[BenchmarkTask]:
    """Seeded synthetic tasks with a planted coupling in each.

    Per task: ``n_contexts`` contexts (content length drawn from ``context_tokens``) and
    ``n_tools`` tools; unary priors uniform in [0, 1]; each context-tool pair gets an
    interaction with probability ``density``, positive with probability
    ``positive_fraction``, magnitude uniform in [0.1, 1.0]. Planted: a gold context, a gold
    tool (pair +1.0 to +1.5) and a decoy tool with high unary (0.9 to 1.0) that conflicts
    with the gold context (-1.0 to -1.5); the toy executor calls the decoy when the gold
    context or gold tool is missing. Budget limits are ``tightness`` × the pool's totals,
    raised where needed so the gold pair always fits.
    Raises ``ValueError`` on sizes < 2 or fractions outside [0, 1].
    """
    if size is None:
        size = 20
    if n_contexts < 1 or n_tools < 2:
        raise ValueError(f"need n_contexts >= 1 and n_tools >= 2, got {n_contexts}, {n_tools}")
    for name, value in (("density", density), ("positive_fraction", positive_fraction),
                        ("tightness", tightness)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    tasks = []
    for index in range(size):
        rng = random.Random(f"junction-synthetic:{seed}:{index}:{n_contexts}:{n_tools}")
        topics = rng.sample(_TOPICS, 6)
        contexts = tuple(
            ContextResource.from_text(
                f"ctx-{i:03d}",
                _text(rng, topics, rng.randint(*context_tokens)),
                rng.choice([SourceKind.POLICY, SourceKind.CODE, SourceKind.MEMORY,
                            SourceKind.OTHER]),
            )
            for i in range(n_contexts)
        )
        tool_list: list[ToolResource] = []
        for j in range(n_tools):
            props = {
                f"arg_{k}": {"type": rng.choice(["string", "number", "boolean"]),
                             "description": _text(rng, topics, rng.randint(2, 8))}
                for k in range(rng.randint(1, 5))
            }
            tool_list.append(ToolResource.from_schema(
                f"tool-{j:03d}",
                _text(rng, topics, rng.randint(5, 20)),
                {"type": "object", "properties": props},
                estimated_latency_ms=round(rng.uniform(*tool_latency_ms), 1),
                estimated_cost_usd=round(rng.uniform(*tool_cost_usd), 5),
            ))
        tools = tuple(tool_list)
        gold_c = contexts[rng.randrange(n_contexts)].id
        gold_t, decoy_t = (tools[j].id for j in rng.sample(range(n_tools), 2))
        resources: tuple[ContextResource | ToolResource, ...] = (*contexts, *tools)
        unary = {r.id: round(rng.random(), 4) for r in resources}
        unary[decoy_t] = round(rng.uniform(0.9, 1.0), 4)
        pairs: dict[tuple[str, str], float] = {}
        for c in contexts:
            for t in tools:
                if rng.random() < density:
                    sign = 1.0 if rng.random() < positive_fraction else -1.0
                    key = (c.id, t.id) if rng.random() < 0.5 else (t.id, c.id)
                    pairs[key] = round(sign * rng.uniform(0.1, 1.0), 4)
        for key in [(gold_c, gold_t), (gold_t, gold_c), (gold_c, decoy_t), (decoy_t, gold_c)]:
            pairs.pop(key, None)
        pairs[(gold_c, gold_t)] = round(rng.uniform(1.0, 1.5), 4)
        pairs[(gold_c, decoy_t)] = round(-rng.uniform(1.0, 1.5), 4)
        by_id = {r.id: r for r in resources}
        gc = cast(ContextResource, by_id[gold_c])  # gold_c is a context's id
        gt = cast(ToolResource, by_id[gold_t])  # gold_t is a tool's id
        total_tokens = sum(r.token_cost for r in by_id.values())
        budget = Budget(
            max_tokens=max(gc.token_cost + gt.token_cost, math.floor(tightness * total_tokens)),
            max_tools=max(1, math.ceil(tightness * n_tools)),
            max_latency_ms=round(max(gt.estimated_latency_ms,
                                     tightness * sum(t.estimated_latency_ms for t in tools)), 1),
            max_cost_usd=round(max(gt.estimated_cost_usd,
                                   tightness * sum(t.estimated_cost_usd for t in tools)), 5),
        )
        objective_words = [*rng.sample(gc.content.split(), 4), *gt.description.split()[:4]]
        tasks.append(BenchmarkTask(
            task_id=f"{suite}-{seed}-{index:05d}",
            suite=suite,
            objective=" ".join(objective_words),
            contexts=contexts,
            tools=tools,
            budget=budget,
            unary=unary,
            interactions=tuple(Interaction(source=a, target=b, weight=w)
                               for (a, b), w in sorted(pairs.items())),
            gold_context_ids=(gold_c,),
            gold_tool_ids=(gold_t,),
            verifier=VerifierSpec(kind="toy_calls", params={"steps": [
                {"tool": gold_t, "requires": [gold_c], "fallback": decoy_t}]}),
        ))
    return tasks
