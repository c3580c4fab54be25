"""policy-desk: a help desk whose policy pages say which tool handles a request.

The data is a folder the user names (``--data policy-desk=PATH`` or $POLICY_DESK_DATA):
``requests.jsonl``, one request a line ({"topic", "tool", "request"}), and
``pages/<topic>.md``, the policy page of each topic.
"""

import json
from pathlib import Path

from junction.agent.grade import AgentGrade, Measure
from junction.agent.graders import GraderInfo, register_grader
from junction.budget import Budget
from junction.candidates import candidate_pools
from junction.resources import ContextResource, ToolResource
from junction.select import exceeded_limit, make_selection
from junction.strategies.base import FunctionStrategy, StrategyResult, joint_problem
from junction.strategies.catalog import StrategyInfo, register_strategy
from junction.suites import SuiteInfo, register_suite
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.verifiers import Outcome, VerifierInfo, register_verifier

SUITE = "policy-desk"
DATA_ENV = "POLICY_DESK_DATA"


def unavailable(data=None):
    """Why the suite cannot be built from the folder ``data`` (one line), or None."""
    if not data:
        return f"{SUITE}: no data folder: give --data {SUITE}=PATH or set ${DATA_ENV}"
    if not (Path(data) / "requests.jsonl").is_file():
        return f"{SUITE}: {data} has no requests.jsonl"
    return None


def build(seed=0, size=None, path=None):
    """One task per request of the folder ``path``: every policy page and every tool;
    the request's page and its tool are gold."""
    reason = unavailable(path)
    if reason:
        raise FileNotFoundError(reason)
    folder = Path(path)
    lines = (folder / "requests.jsonl").read_text().splitlines()
    requests = [json.loads(line) for line in lines if line.strip()]
    pages = tuple(ContextResource.from_text(f"page-{r['topic']}",
                                            (folder / "pages" / f"{r['topic']}.md").read_text())
                  for r in requests)
    tools = tuple(ToolResource.from_schema(r["tool"], f"Handle a {r['topic']} request.",
                                           {"type": "object"}) for r in requests)
    return [BenchmarkTask(
        task_id=f"desk-{r['topic']}", suite=SUITE, objective=r["request"],
        contexts=pages, tools=tools, budget=Budget(max_tokens=60),
        gold_context_ids=(f"page-{r['topic']}",), gold_tool_ids=(r["tool"],),
        verifier=VerifierSpec(kind="page_and_tool", params={"tool": r["tool"]}))
        for r in requests[:size]]


def check(task, result):
    """Verified success: the gold page and the gold tool were both exposed."""
    ok = set(task.gold_context_ids) <= set(result.context_ids) \
        and task.verifier.params["tool"] in result.tool_ids
    return Outcome(success=ok, reason="" if ok else "the page or its tool is missing")


def grade(task, result):
    """Agent success: the agent called the tool the page names; its measure: how many
    calls went to another tool."""
    called = [c.tool_id for c in result.tool_calls]
    other = {"other_calls": float(sum(c != task.verifier.params["tool"] for c in called))}
    if task.verifier.params["tool"] in called:
        return AgentGrade(success=True, outcome="called", measures=other)
    return AgentGrade(success=False, outcome="missed", error_type="agent:wrong_tool",
                      measures=other)


def make_cheapest_strategy():
    """Contexts and tools in one queue, best utility per token first, each taken while the
    set fits the budget: a joint selection that ignores interactions."""

    def select(view, pool):
        pools = candidate_pools(view, pool)       # the run's pool rule and limit
        problem = joint_problem(view, pools)      # its scores live in problem.unary
        queue = sorted((*problem.contexts, *problem.tools),
                       key=lambda r: (-problem.u(r.id) / (1 + r.token_cost), r.id))
        chosen = []
        for resource in queue:
            if problem.u(resource.id) > 0 and exceeded_limit(
                    problem.budget, [*chosen, resource], problem.max_size) is None:
                chosen.append(resource)
        ids = {r.id for r in chosen}
        selection = make_selection(
            "cheapest", problem, [c.id for c in problem.contexts if c.id in ids],
            [t.id for t in problem.tools if t.id in ids], status="heuristic")
        return StrategyResult(selection, pools)

    return FunctionStrategy(select)


register_verifier(VerifierInfo("page_and_tool", "the gold page and its tool are exposed",
                               check))
register_grader(GraderInfo(
    "called_tool", ("page_and_tool",), lambda task: True, grade,
    {"called": "the agent called the tool the page names", "missed": "it did not"},
    decode="junction.agent.prompt:parse_output",  # BFCL's call syntax, as the prompt asks
    measures=(Measure("other_calls", "calls of a tool the page does not name", "calls, >= 0",
                      "lower"),),
    report_note="a call of the named tool counts, whatever its arguments"))
register_strategy(StrategyInfo("cheapest", make_cheapest_strategy, "joint",
                               "best utility per token first, interactions ignored",
                               sees_interactions=False, ranks_apart=False))
register_suite(SuiteInfo(SUITE, build, None, pool_limit=None,
                         description="policy pages that name the tool for each request",
                         in_default_run=False, unavailable=unavailable, data_env=DATA_ENV))
