"""A new agent is one folder and a registry entry: what ``simulate`` and ``report`` bill each request
comes from the format's own declaration (``Format.request_usage``), not from a list in the reports."""
from __future__ import annotations

import json

from ctxkit.reports.agent_usage import agent_requests
from ctxkit.transcript import interface
from ctxkit.transcript.interface import Format, RequestUsage, handler, register
from ctxkit.transcript.reader import read_bytes


def test_a_format_registered_with_its_usage_is_billed_by_it():
    base = handler("anthropic")

    def usage(t, entries):  # this agent records its usage on the message: {"billed": [input, cached, output]}
        billed = t.entry(max(entries)).get("billed")
        return RequestUsage(input_tokens=billed[0], cache_read_input_tokens=billed[1], output_tokens=billed[2],
                            model="gpt-4o") if billed else None

    agent = base._replace(name="test-agent", detect=lambda d: "billed" in d, request_usage=usage)
    assert isinstance(agent, Format)
    register(agent)
    try:
        lines = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "billed": [900, 100, 40]},
                 {"role": "user", "content": "more"}, {"role": "assistant", "content": "sure"}]
        t = read_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines), name="s").as_format("test-agent")
        requests = agent_requests(t)
        assert [(r.usage.input_tokens, r.usage.cache_read_input_tokens, r.usage.output_tokens, r.model)
                for r in requests] == [(900, 100, 40, "gpt-4o"), (0, 0, 0, "")]
    finally:
        interface._REGISTRY.pop("test-agent", None)
