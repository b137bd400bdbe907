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


def test_every_format_that_records_usage_declares_where_a_simulated_request_replaces_it(tmp_path):
    """simulate's policy replay writes each simulated request's figures where the format records usage (its
    ``usage_writer``), and reads them back through the format's own usage readers: the count the thresholds
    use (``Format.usage``) and what the request is billed (``Format.request_usage``)."""
    import test_simulate_agents as sa

    from ctxkit.reports.replay import GrowingRead
    from ctxkit.tokens import make_counter
    from ctxkit.tokens.view_count import count_view
    from ctxkit.transcript import read_transcript

    simulated = RequestUsage(input_tokens=20_000, cache_read_input_tokens=30_000, cache_creation_input_tokens=10_000)
    for fmt in ("codex", "gemini", "opencode", "cline"):
        assert handler(fmt).usage_writer is not None
        (tmp_path / fmt).mkdir()
        t = read_transcript(str(sa.SESSIONS[fmt][0](tmp_path / fmt)))
        writer = handler(t.format).usage_writer
        lines = []
        for i in range(t.n_lines):
            raw = t.raw_line(i)[0]
            entry = json.loads(raw)
            lines.append((json.dumps(entry) if writer.marker in raw and writer.write(entry, simulated)
                          else raw.decode()).encode() + b"\n")
        again = GrowingRead(tmp_path / f"{fmt}.jsonl").add(lines)
        billed = agent_requests(again)[-1].usage
        assert (billed.input_tokens + billed.cache_creation_input_tokens, billed.cache_read_input_tokens) \
            == (30_000, 30_000), fmt
        count = count_view(again, make_counter("rough"), 0)
        assert count.source == "usage" and count.reported == 60_000 + billed.output_tokens, fmt
