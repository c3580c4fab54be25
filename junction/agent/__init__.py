"""The outcome half of a run: what an executor did with a strategy's exposed set.

- ``execution``: the executor interface and the toy executor (the verifiers that judge
  its result are ``junction.verifiers``);
- ``prompt``: the agent's prompt (BFCL's prompting layout), fitted to a context window;
- ``generations``: the generation cache and the executor both model agents share;
- ``llm``: the language-model agent on llama.cpp;
- ``remote``: the same prompt on any OpenAI-compatible server;
- ``graders``: the agent grader catalog (each record: decoder, grading function, outcomes,
  measures); ``grade``: what a grader gives (``AgentGrade``, ``Measure``);
- ``grading``: BFCL outcomes from the agent's output; ``tau2_grading``: tau2's action check;
- ``bfcl_checker``: BFCL's own checker, imported without its provider SDKs.

The evidence half (traces, store, metrics, reports) is ``junction.evidence``.
"""
