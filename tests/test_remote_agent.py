"""The remote agent against a real server: llama-cpp-python's own OpenAI-compatible server
(its ``[server]`` extra) with the embedded model, started once per session on 127.0.0.1.

Each test makes 0-2 generations (short token caps where the answer's length does not
matter); a loopback proxy in front of the server answers 500s or goes away on cue.
"""

from __future__ import annotations

import http.server
import json
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from junction.agent.prompt import AgentError, fit_prompt, prompt_limit, render_prompt
from junction.agent.remote import (
    RemoteAgent,
    RemoteAgentConfig,
    RemoteExecutor,
    RemoteGenerationCache,
    check_agent_url,
)
from junction.evaluate import evaluate_batch
from junction.strategies import make_strategy
from junction.units import UnitSpec

pytestmark = pytest.mark.model

ALIAS = "qwen-test"
SERVER_CTX = 2560
"""The server's context window: room for BFCL multiple rows' prompts (1,300-1,700 tokens)
and their 192 generated tokens, too small for the memory reference's whole conversation
(notetaker's: about 3,400 prompt tokens, the memory API 2,154 of them), which it refuses."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    """``python -m llama_cpp.server`` on the embedded model (n_ctx ``SERVER_CTX``), model
    id ``ALIAS``; yields its base URL. Set as the embedded agent's ``Llama`` is: logits of
    the last prompt token only (the server's default computes and keeps them for every
    prompt token, which makes a long prompt much slower there than embedded), and one
    thread for prompt evaluation as for generation (``AgentConfig.n_threads``; the
    server's default is every core, which loses under ``make test``'s two busy workers)."""
    pytest.importorskip("uvicorn", reason="llama-cpp-python's [server] extra not installed")
    from junction.models import embedded_model_path

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path()),
         "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", str(SERVER_CTX), "--n_threads", "1", "--n_threads_batch", "1",
         "--logits_all", "false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}")
            try:
                urllib.request.urlopen(url + "/models", timeout=1).read()
                break
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        else:
            pytest.fail("llama_cpp.server did not start within 120 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class _Proxy:
    """A loopback HTTP proxy to ``target``: the first ``fail`` requests get a 500, then it
    forwards; ``stop()`` closes it (the server is gone). ``model_fields`` are added to each
    entry of the server's ``GET /v1/models`` and ``props`` answers ``GET /props``, so the
    real server can report a window as vLLM and llama.cpp's llama-server do."""

    def __init__(self, target: str, fail: int = 0, completions: int | None = None,
                 model_fields: dict | None = None, props: dict | None = None,
                 stall: float = 0.0) -> None:
        self.fail, self.seen = fail, list[dict]()
        self.completions = completions  # chat completions forwarded before it goes down
        self.stall = stall  # > 0: once down, a chat completion is held that long, then dropped
        proxy = self
        origin = target.rsplit("/v1", 1)[0]

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.seen.append(self.path)
                if self.path.endswith("/chat/completions") and proxy.completions is not None:
                    if proxy.completions <= 0:  # down: the connection closes unanswered
                        time.sleep(proxy.stall)  # (after ``stall`` s: no answer in time)
                        self.close_connection = True
                        return
                    proxy.completions -= 1
                if len(proxy.seen) <= proxy.fail:
                    self._answer(500, b"{}")
                    return
                if self.path == "/props" and props is not None:
                    self._answer(200, json.dumps(props).encode())
                    return
                req = urllib.request.Request(origin + self.path, data=body or None,
                                             method=self.command,
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=600) as resp:
                        status, data = resp.status, resp.read()
                except urllib.error.HTTPError as error:  # forwarded as the server said it
                    status, data = error.code, error.read()
                if self.path.endswith("/models") and model_fields and status == 200:
                    listed = json.loads(data)
                    for entry in listed["data"]:
                        entry.update(model_fields)
                    data = json.dumps(listed).encode()
                self._answer(status, data)

            def _answer(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="module")
def multiple_123():
    from junction_datasets.bfcl import multiple_suite

    return next(t for t in multiple_suite(size=None).tasks
                if t.metadata["bfcl_id"] == "multiple_123")


def test_same_prompt_gives_the_embedded_agents_text(server, agent_model, multiple_123):
    # BFCL's system prompt with one of the row's tools (about 370 prompt tokens); the full
    # token cap (192), so the whole answer is compared
    tools = tuple(sorted(t.id for t in multiple_123.tools))[:1]
    prompt = render_prompt(multiple_123.router_view(), (), tools)
    embedded = agent_model.generate(prompt)
    remote = RemoteAgent(server, ALIAS).generate(prompt)
    assert remote.text == embedded.text
    assert (remote.prompt_tokens, remote.generated_tokens) == (
        embedded.prompt_tokens, embedded.generated_tokens)


def test_trace_names_the_server_not_a_sha256_and_a_hit_is_free(server, multiple_123,
                                                                tmp_path):
    # the row listing one of its three functions: a shorter prompt for the server to read
    from tests.helpers import with_listed_tools

    task = with_listed_tools(multiple_123, ("calculate_probability",))
    config = RemoteAgentConfig(max_tokens=8, context_tokens=SERVER_CTX)
    executor = RemoteExecutor(RemoteAgent(server, ALIAS, config),
                              RemoteGenerationCache(tmp_path / "agent.sqlite"))
    listed = make_strategy("bfcl_listed")
    ids = {task.task_id}
    spec = UnitSpec(strategy="bfcl_listed", run_id="r", seed=0, scale=1.0, pool_limit=8,
                    agent_task_ids=tuple(ids))
    first, t1 = evaluate_batch([task], listed, spec, executor)
    second, t2 = evaluate_batch([task], listed, spec, executor)
    (record,) = first
    port = server.split(":")[2].split("/")[0]
    assert record.executor == "remote" and record.agent_model_sha256 is None
    assert record.agent_remote == f"127.0.0.1:{port}/v1 {ALIAS}"
    assert (t1[0]["agent_cached"], t2[0]["agent_cached"]) == (False, True)
    assert [r.model_dump_json() for r in first] == [r.model_dump_json() for r in second]


def test_a_memory_reference_is_cut_as_the_embedded_agent_cuts_it(server, agent_model, tmp_path):
    # notetaker's whole conversation and the whole memory API overflow the server's window:
    # the server refuses that prompt. With one of the API's tools and a window of
    # NOTETAKER_WINDOW tokens (--agent-context-tokens, below the server's own), the
    # conversation still overflows: the executor keeps the most recent turns that fit, the
    # same ones the embedded agent keeps at that window, and the trace names the rest
    from tests.helpers import NOTETAKER_WINDOW, notetaker, notetaker_one_tool

    full = notetaker()
    whole = render_prompt(full.router_view(), [c.id for c in full.contexts],
                          full.metadata["listed_tool_ids"])
    assert agent_model.count_prompt_tokens(whole) > SERVER_CTX
    with pytest.raises(AgentError, match="HTTP 400"):  # over the server's window: refused
        RemoteAgent(server, ALIAS, RemoteAgentConfig(max_tokens=16)).generate(whole)
    task = notetaker_one_tool()
    agent = RemoteAgent(server, ALIAS,
                        RemoteAgentConfig(max_tokens=16, context_tokens=NOTETAKER_WINDOW))
    assert agent.check_window() == NOTETAKER_WINDOW
    executor = RemoteExecutor(agent, RemoteGenerationCache(tmp_path / "agent.sqlite"))
    (record,), _ = evaluate_batch([task], make_strategy("bfcl_listed"), UnitSpec(
        strategy="bfcl_listed", run_id="r", seed=0, scale=1.0, pool_limit=8,
        agent_task_ids=(task.task_id,)), executor)
    view = task.router_view()
    uncut = render_prompt(view, record.exposed_context_ids, record.exposed_tool_ids)
    assert agent.count_prompt_tokens(uncut) == agent_model.count_prompt_tokens(uncut)
    assert agent.count_prompt_tokens(uncut) > agent.prompt_limit
    embedded, dropped = fit_prompt(view, record.exposed_context_ids, record.exposed_tool_ids,
                                   agent_model.count_prompt_tokens,
                                   prompt_limit(NOTETAKER_WINDOW, 16))
    assert 0 < len(dropped) < len(task.contexts)
    assert record.agent_dropped_context_ids == dropped
    assert record.agent_prompt_sha256 == embedded.sha256
    # the server read the fitted prompt as the embedded count has it, within the window
    assert record.agent_prompt_tokens == agent_model.count_prompt_tokens(embedded)
    assert record.agent_prompt_tokens <= agent.prompt_limit


def test_a_server_that_reports_no_window_is_one_line_asking_for_the_option(server):
    # llama-cpp-python's server lists no max_model_len and has no /props
    with pytest.raises(AgentError) as err:
        RemoteAgent(server, ALIAS).check_window()
    message = str(err.value)
    assert "\n" not in message and server in message and "--agent-context-tokens N" in message


@pytest.mark.parametrize("report", [
    # vLLM: the model card's max_model_len in GET /v1/models
    {"model_fields": {"max_model_len": 2048}},
    # llama.cpp's llama-server: a slot's window in GET /props
    {"props": {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}},
], ids=["vllm-max-model-len", "llama-server-props"])
def test_a_window_the_server_reports_is_the_one_the_prompt_fits(server, report):
    proxy = _Proxy(server, **report)
    try:
        agent = RemoteAgent(proxy.url, ALIAS, RemoteAgentConfig(max_tokens=16))
        assert agent.check_window() == 2048
        assert agent.prompt_limit == prompt_limit(2048, 16)
    finally:
        proxy.stop()


def test_two_500s_then_success_is_retried(server, multiple_123):
    proxy = _Proxy(server, fail=2)
    try:
        agent = RemoteAgent(proxy.url, ALIAS, RemoteAgentConfig(max_tokens=4, max_retries=2))
        prompt = render_prompt(multiple_123.router_view(), (), ())
        generation = agent.generate(prompt)
    finally:
        proxy.stop()
    assert proxy.seen == ["/v1/chat/completions"] * 3  # two 500s, then forwarded
    assert generation.generated_tokens >= 1


def test_server_gone_is_one_line_naming_the_url(server, multiple_123):
    proxy = _Proxy(server)
    agent = RemoteAgent(proxy.url, ALIAS, RemoteAgentConfig(max_tokens=4, max_retries=1))
    agent.check_model()  # it was up
    proxy.stop()
    with pytest.raises(AgentError) as err:
        agent.generate(render_prompt(multiple_123.router_view(), (), ()))
    message = str(err.value)
    assert "\n" not in message and proxy.url in message and "cannot connect" in message


def test_an_http_400_carries_the_servers_reason(server, multiple_123):
    # a window larger than the server's: the server refuses the prompt with HTTP 400 and
    # says why; before, the line said "HTTP 400" only
    agent = RemoteAgent(server, ALIAS, RemoteAgentConfig(max_tokens=4, context_tokens=8192))
    long = multiple_123.router_view().model_copy(
        update={"objective": "Which tool is right? " * 1200})
    with pytest.raises(AgentError) as err:
        agent.generate(render_prompt(long, (), ()))
    message = str(err.value)
    assert "\n" not in message and "a chat completion failed: HTTP 400: " in message
    assert f"maximum context length is {SERVER_CTX} tokens" in message, message


def test_the_agent_timeout_reaches_the_generation(server, multiple_123):
    # --agent-timeout S becomes the generation's timeout, --agent-check-timeout S the
    # checks' (10 s when not given: RemoteAgentConfig).
    # The proxy forwards the checks (the token-count probe is the one chat completion) and
    # then holds each chat completion without forwarding it: sent to the server, the three
    # abandoned requests (the client retries twice) each went on decoding up to 192 tokens
    # there, ahead of the next test's requests
    from flows.workers import agent_executor
    from junction.units import AgentSpec

    proxy = _Proxy(server, completions=1, stall=1.0)
    try:
        executor = agent_executor(AgentSpec(model=ALIAS, url=proxy.url,
                                            context_tokens=SERVER_CTX, timeout_s=0.001,
                                            check_timeout_s=30.0))
        assert executor.agent.config.timeout_s == 0.001
        assert executor.agent.config.check_timeout_s == 30.0
        with pytest.raises(AgentError, match=r"a chat completion failed: no answer within "
                                             r"0.001 s \(the client retries") as err:
            executor.agent.generate(render_prompt(multiple_123.router_view(), (), ()))
        assert "--agent-check-timeout" not in str(err.value)  # a generation, not a check
    finally:
        proxy.stop()
    # the probe, then the generation's first try and two retries
    assert proxy.seen.count("/v1/chat/completions") == 4


def test_wrong_model_name_lists_the_servers_models(server):
    with pytest.raises(AgentError) as err:
        RemoteAgent(server, "gpt-5").check_model()
    assert str(err.value) == (f"agent server {server} does not serve model 'gpt-5'; "
                              f"it serves: {ALIAS}")


@pytest.mark.parametrize("url", ["http://user:secret@127.0.0.1:1/v1",
                                 "http://127.0.0.1:1/v1?api_key=secret", "ftp://host/v1",
                                 "127.0.0.1:8080"])
def test_urls_with_credentials_or_no_scheme_are_refused(url):
    with pytest.raises(AgentError) as err:
        check_agent_url(url)
    assert "secret" not in str(err.value)


def test_the_api_key_is_read_from_the_environment_only(monkeypatch):
    monkeypatch.setenv("JUNCTION_AGENT_API_KEY", "sk-test-123")
    agent = RemoteAgent("http://127.0.0.1:1/v1", ALIAS)
    assert agent._client.api_key == "sk-test-123"
    assert "sk-test" not in agent.endpoint and "sk-test" not in agent.config.key()


@pytest.mark.flow
def test_bench_server_down_mid_run_fails_in_one_line_and_a_rerun_resumes(server, tmp_path,
                                                                        prefect_harness):
    # bfcl-multiple, 1 task, exact then fixed_split in one worker, one unit each, the
    # agent acting for fixed_split only (--agent-strategy): the server answers the
    # token-count probe (before any work), exact's unit is done and written, then the
    # server is gone for fixed_split's generation. The one generation this makes is the
    # resumed run's; the agent on exact too would add one more, which shows nothing more
    # here. Budget scale 0.5: fewer tools, a shorter prompt for the server to read than at
    # 1, so the test is shorter.
    # The run fails naming the URL, exact's unit is kept, and the same command resumes.
    # Both runs report to the session's Prefect server (as a user with a configured one):
    # the agent's server is what goes away here; a temporary Prefect server's own faults
    # are tests/test_faults.py's.
    import os
    import shutil

    from tests.helpers import on_session_server

    proxy = _Proxy(server, completions=1)
    env = on_session_server({
        **os.environ, "JUNCTION_STATE_DIR": str(tmp_path / "state"),
        "JUNCTION_WAREHOUSE": str(tmp_path / "wh"), "JUNCTION_REPORTS": str(tmp_path / "rep")})
    junction = shutil.which("junction", path=os.path.dirname(sys.executable))
    args = [junction, "bench", "--suite", "bfcl-multiple", "--size", "1", "--agent-size", "1",
            "--strategy", "exact", "--strategy", "fixed_split",
            "--agent-strategy", "fixed_split", "--budget-scale", "0.5",
            "--workers", "1", "--agent-url", proxy.url, "--agent-model", ALIAS,
            "--agent-context-tokens", str(SERVER_CTX), "--run-id", "down"]
    try:
        first = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        errors = [line for line in first.stderr.splitlines() if line.startswith("error:")]
        assert first.returncode == 1, first.stderr[-2000:]
        assert len(errors) == 1 and proxy.url in errors[0], first.stderr[-2000:]
        # the line says how to go on (before: no resume command)
        from flows.cli_run import invoked_as  # the program as started (on PATH or not)

        resume = " ".join([invoked_as(junction), shlex.join([
            "bench", "--run-id", "down",
            *[a for a in args[2:] if a not in ("--run-id", "down")]])])
        assert f"; resume with `{resume}`; " in errors[0], errors[0]
        assert "Traceback" not in first.stderr
        meta = json.loads((tmp_path / "wh" / "runs" / "down.json").read_text())
        assert meta["status"] == "failed" and proxy.url in meta["error"]
        kept = sorted(p.relative_to(tmp_path / "wh").as_posix()
                      for p in (tmp_path / "wh").rglob("*.parquet") if "traces" in p.parts)
        assert kept and all("strategy=exact" in p for p in kept), kept
        proxy.completions = None  # back up
        second = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    finally:
        proxy.stop()
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resuming run down" in second.stdout and "(1 already done)" in second.stdout


def test_the_remote_agent_gives_the_embedded_agents_tau2_outcomes(server, agent_model,
                                                                  tmp_path):
    # a τ fixture task (the one with the shortest prompt, about 450 tokens), the coupling
    # reference's exposed set (gold tools, siblings and the documents naming them), the τ
    # layout: the same text, hence the same grade
    from pathlib import Path

    from junction_datasets.tau2_banking import banking_suite

    from junction.agent.generations import AgentCache
    from junction.agent.graders import grade_agent
    from junction.agent.llm import LLMExecutor
    from junction.agent.tau2_grading import TAU2_OUTCOMES

    fixture = Path(__file__).resolve().parent / "data" / "tau2_fixture"
    (task,) = [t for t in banking_suite(split="all", path=fixture).tasks
               if t.metadata["tau2_id"] == "task_002"]
    embedded = LLMExecutor(agent_model, AgentCache(tmp_path / "embedded.sqlite"))
    remote = RemoteExecutor(RemoteAgent(server, ALIAS,
                                        RemoteAgentConfig(context_tokens=SERVER_CTX)),
                            RemoteGenerationCache(tmp_path / "remote.sqlite"))
    sel = make_strategy("gold_tools_documents").select(task, None).selection
    got = [executor.execute(task, sel.context_ids, sel.tool_ids)
           for executor in (embedded, remote)]
    assert got[0].text == got[1].text
    grades = [grade_agent(task, g) for g in got]
    assert grades[0] == grades[1]
    assert grades[0].outcome in TAU2_OUTCOMES, grades[0]
