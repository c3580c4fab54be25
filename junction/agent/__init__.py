"""The outcome half of a run: what an executor did with a strategy's exposed set.

- ``execution``: the executor interface, the toy executor and the verifiers;
- ``llm``: the language-model agent on llama.cpp (BFCL's prompting layout);
- ``grading``: BFCL outcomes from the agent's output;
- ``bfcl_checker``: BFCL's own checker, imported without its provider SDKs.

The evidence half (traces, store, metrics, reports) is ``junction.evidence``.
"""
