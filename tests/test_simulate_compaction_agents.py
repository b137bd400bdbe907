"""The compaction agents' files beside a session (docs/simulate.md, "The replayed row"): Claude Code 2.1.81
(held-out 6ec78367) writes into its ``agent-acompact-*`` file the conversation it compacts, each response
with its id and usage, then the summary request. A response is billed once: the copies are neither the
agent's requests nor its summary, and a subagent's compaction is that subagent's."""
from __future__ import annotations

import copy
import json
from datetime import timedelta

from test_simulate_session_prefix import Session, _turns, _within_ten_percent

from ctxkit import load_policy
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.simulate import simulate_session

SUMMARY_USAGE = {"input_tokens": 1_277, "cache_read_input_tokens": 26_100, "cache_creation_input_tokens": 3_400,
                 "output_tokens": 4_000}


def _compacted(s: Session, at: int) -> None:
    s._add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": 30_000}}, timedelta(seconds=at))
    s.lines[-1]["parentUuid"] = None
    s._add({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "This session is being "
            "continued from a previous conversation. " + "The parser is done. " * 100}}, timedelta(seconds=at + 1))


def _agent_file(copied: list[dict], name: str) -> list[dict]:
    """A compaction agent's file: the conversation it compacts (its lines as sidechain ones), the compact
    prompt, and the summary request with a response of its own."""
    lines = []
    for line in copied:
        c = copy.deepcopy(line)
        c.update(isSidechain=True, agentId=name)
        lines.append(c)
    base = {"isSidechain": True, "agentId": name, "sessionId": "s", "version": "2.1.81"}
    stamp = copied[-1]["timestamp"]  # (the agent starts as the last request before the boundary is answered)
    lines.append({**base, "type": "user", "uuid": f"{name}-p", "parentUuid": lines[-1]["uuid"],
                  "timestamp": stamp, "message": {"role": "user", "content": "Your task is to create a "
                                                  "detailed summary of the conversation so far."}})
    lines.append({**base, "type": "assistant", "uuid": f"{name}-s", "parentUuid": f"{name}-p", "timestamp": stamp,
                  "message": {"id": f"msg_summary_{name}", "type": "message", "role": "assistant",
                              "model": "claude-opus-4-6", "content": [{"type": "text", "text": "<summary>done"}],
                              "usage": SUMMARY_USAGE}})
    return lines


def _write(tmp_path, s: Session, agents: dict[str, list[dict]]):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    folder = tmp_path / "s" / "subagents"
    folder.mkdir(parents=True)
    for name, lines in agents.items():
        (folder / f"agent-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _session() -> Session:
    return _turns(Session("2.1.81"), 0, [(0, 0, 20_000), (20, 20_000, 3_000), (40, 23_000, 3_000)])


def test_the_conversation_a_compaction_agent_copies_is_billed_once(tmp_path):
    s = _session()
    copied = [x for x in s.lines if x["type"] == "assistant"]
    _compacted(s, 60)
    _turns(s, 3, [(80, 0, 9_000), (100, 9_000, 600)])
    path = _write(tmp_path, s, {"acompact-0a1b": _agent_file(copied, "acompact-0a1b")})
    result = simulate_session(str(path), [("default", load_policy(None))], load_pricing())
    rows = result["rows"]
    # the summary request alone is the agent's own: the copies were counted a second time before
    assert [r.usage.cache_read_input_tokens for r in rows["sidechain"].requests] == [26_100]
    summary = [r for r in rows["replayed"].requests if r.kind == "summarizer"]
    assert len(summary) == 1 and summary[0].usage.output_tokens == 4_000
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]


def test_a_subagents_compaction_is_that_subagents(tmp_path):
    """A subagent that compacted: its compaction agent copies the subagent's conversation, not the main
    chain's. Its summary request is replayed after the subagent's requests before the boundary (it stood for
    the main chain's compaction before), and the main chain, which compacted nothing, has none."""
    s = _session()
    sub = Session("2.1.81")
    _turns(sub, 0, [(5, 0, 21_000), (10, 21_000, 3_000), (15, 24_000, 2_000)])
    for line in sub.lines:
        line.update(isSidechain=True, agentId="a1", uuid="a1-" + line["uuid"],
                    parentUuid=("a1-" + line["parentUuid"]) if line["parentUuid"] else None)
        if line["type"] == "assistant":
            line["message"]["id"] = "msg_a1_" + line["message"]["id"]
    copied = [x for x in sub.lines if x["type"] == "assistant"]
    _compacted(sub, 20)
    sub.lines[-2].update(isSidechain=True, uuid="a1-b")
    sub.lines[-1].update(isSidechain=True, uuid="a1-sum", parentUuid="a1-b")
    agents = {"a1": sub.lines, "acompact-9f8e": _agent_file(copied, "acompact-9f8e")}
    path = _write(tmp_path, s, agents)
    result = simulate_session(str(path), [("default", load_policy(None))], load_pricing())
    rows = result["rows"]
    assert len(rows["sidechain"].requests) == 4  # the subagent's three and the summary request
    kinds = [r.kind for r in rows["replayed"].requests]
    assert kinds.count("summarizer") == 1 and kinds.count("subagent") == 3
    assert rows["replayed"].compactions == []
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]


def test_a_compaction_without_a_file_leaves_the_next_ones_figures_to_it(tmp_path):
    """Not every compaction has a compaction agent's file (one from the session memory asks for no summary;
    a session begun before Claude Code wrote them): the figures of each file's summary request are those of
    the compaction whose boundary follows it (asked for 0.3 to 55 seconds before the boundary in the real
    sessions). Paired by their order, the first compaction took the second's (its 4,000 tokens out, made
    a minute later) and the second was estimated."""
    s = _session()
    _compacted(s, 60)  # (no file)
    start = len(s.lines)
    _turns(s, 3, [(80, 0, 9_000), (100, 9_000, 600), (120, 9_600, 600)])
    copied = [x for x in s.lines[start:] if x["type"] == "assistant"]
    _compacted(s, 140)
    _turns(s, 6, [(160, 0, 9_000), (180, 9_000, 600)])
    agent = _agent_file(copied, "acompact-7c2d")
    agent[-1]["message"]["usage"] = {"input_tokens": 1_100, "cache_read_input_tokens": 10_200,
                                     "cache_creation_input_tokens": 0, "output_tokens": 4_000}
    path = _write(tmp_path, s, {"acompact-7c2d": agent})
    result = simulate_session(str(path), [("default", load_policy(None))], load_pricing())
    summaries = [r for r in result["rows"]["replayed"].requests if r.kind == "summarizer"]
    assert [r.unrecorded for r in summaries] == [True, False]
    assert summaries[1].usage.output_tokens == 4_000
    assert summaries[1].timestamp.isoformat() == agent[-1]["timestamp"].replace("Z", "+00:00")
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
