"""Properties every registered stage keeps, on random transcripts and random policies (hypothesis).

For each stage in ``ctxkit.stages.REGISTRY``, on a random conversation (Claude Code
or plain Anthropic messages) and random options:

* the view still satisfies the Messages API pairing rules;
* the view does not grow (appended reminders aside: the ``attachments`` stage and
  the snip nudge exist to add text at the tail);
* the same input, policy and clock give the same bytes, against a fresh store and against the
  store a first run filled (its decisions replayed);
* ``expand`` brings back every message and tool output the stage took out of the view.

And for the whole pipeline: compacting, appending a turn and compacting again leaves
the earlier view byte-identical unless a stage reports that a threshold was crossed.

The conversation builder (:func:`conversation`, :func:`write`) lives in tests/builders.py.
"""
from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from builders import Call, Turn, conversation, last_time, load, write, written
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.clock import Clock
from ctxkit.pipeline import compile_pipeline
from ctxkit.policy.model import Policy
from ctxkit.stages import REGISTRY
from ctxkit.stages.base import Context, RunInputs
from ctxkit.stages.collapse.stage import uncollapse
from ctxkit.stages.snip import NUDGE_HEAD, unsnip
from ctxkit.store.disk import Store
from ctxkit.tokens import make_counter
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.claude_code.entries import new_uuid
from ctxkit.transcript.edits import restore_archived
from ctxkit.transcript.snip_ids import message_ids


def context(policy_doc: dict | None, store: Path, now: datetime, **inputs) -> Context:
    policy = Policy.from_mapping(policy_doc or {})
    return Context(policy=policy, tokens=make_counter(policy.estimator, model=policy.model), clock=Clock(now),
                   store=Store(store), inputs=RunInputs(now=now, cwd=store.parent, **inputs))


# -- random conversations and policies --------------------------------------------------------------
_text = st.text(alphabet="abcdefghij klmnop\n", min_size=0, max_size=40)
_result = st.one_of(
    st.integers(0, 12).map(lambda n: "".join(f"line {i}: some output text\n" for i in range(n * 15))),
    st.just(""),
    st.just([{"type": "text", "text": "listed\n" * 60}]),
)
_calls = st.one_of(
    st.builds(Call, st.just("Read"), st.builds(lambda p: {"file_path": f"/work/{p}.py"}, st.sampled_from("abc")),
              _result, st.booleans()),
    st.builds(Call, st.sampled_from(["Grep", "Glob"]), st.builds(lambda p: {"pattern": p}, _text), _result),
    st.builds(Call, st.just("Bash"), st.builds(lambda c: {"command": c}, st.sampled_from(
        ["ls -la /work", "grep -rn def /work", "pytest -q", "echo hi > out.txt", "git log --oneline"])), _result),
    st.builds(Call, st.sampled_from(["Edit", "Write"]), st.just({"file_path": "/work/a.py"}), st.just("ok")),
    st.builds(Call, st.just("mcp__docs__search"), st.just({"query": "x"}), _result),
)
_turn = st.builds(Turn, st.text(alphabet="abcdefgh ", min_size=1, max_size=30).map(lambda s: "task " + s),
                  st.lists(st.lists(_calls, min_size=1, max_size=3), max_size=4),
                  st.one_of(st.none(), st.just("Done."), _text.map(lambda s: "Result: " + s)),
                  st.booleans())
_conversation = st.lists(_turn, min_size=1, max_size=5)

_options = {
    "microcompact": st.fixed_dictionaries({"keep_recent": st.integers(0, 6),
                                           "gap_minutes": st.sampled_from([5, 60, 600]),
                                           "mode": st.sampled_from(["time-based", "both", "api-native"])}),
    "collapse": st.fixed_dictionaries({"commit_ratio": st.sampled_from([0.001, 0.5, 0.9]),
                                       "llm": st.just(False), "min_calls": st.integers(1, 3)}),
    "snip": st.fixed_dictionaries({"nudge": st.booleans(), "nudge_every_tokens": st.sampled_from([50, 10_000])}),
    # (limits above the 2,000-byte preview: below it a "persisted" preview is longer than the output)
    "tool-result-budget": st.fixed_dictionaries({"max_result_chars": st.sampled_from([100, 2_500, 50_000])}),
}
APPENDING_STAGES = {"attachments"}  # exist to add state at the tail of the view
# Stages that replace the history by a summary: what they take out of the view stays in the transcript
# behind the compaction boundary (not for expand to bring back), and a summary asked for by hand
# (--force) may be longer than a very short conversation. They get only realistic windows.
COMPACTING_STAGES = {"autocompact"}
SETTINGS = settings(max_examples=int(os.environ.get("CTXKIT_HYPOTHESIS_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])


@st.composite
def cases(draw):
    turns = draw(_conversation)
    fmt = draw(st.sampled_from(["claude-code", "anthropic"]))
    if draw(st.booleans()) and turns[-1].rounds:
        turns[-1].open_call = Call("Read", {"file_path": "/work/z.py"})
    gap = draw(st.sampled_from([1, 30, 90, 400]))
    stage = draw(st.sampled_from(sorted(REGISTRY)))
    options = draw(_options[stage]) if stage in _options else {}
    force = draw(st.booleans())
    window = None if stage in COMPACTING_STAGES else draw(st.sampled_from([None, 2_000, 8_000]))
    return turns, fmt, gap, stage, options, force, window, draw(st.randoms(use_true_random=False))


def _policy(stage: str, options: dict, window: int | None) -> dict:
    doc: dict = {"summarizer": {"use": "extractive"}, "stages": [{"id": stage, "options": options}],
                 "tools": {"collapsible": ["Read", "Grep", "Glob", "LS", "mcp__*__search"]}}
    if window:
        doc["context_window"] = window
        doc["max_output_tokens"] = 200
    return doc


def _snip_ids(t, rnd) -> tuple[str, ...]:
    ids = message_ids(t.view())
    inner = [sid for sid, where in ids.items() if len(where) == 1][1:-1]
    return tuple(rnd.sample(inner, k=min(len(inner), rnd.randint(0, 2)))) if inner else ()


def _run(stage: str, options: dict, t, store: Path, now: datetime, **inputs):
    ctx = context(_policy(stage, options, inputs.pop("window", None)), store, now, **inputs)
    result = REGISTRY[stage](stage, options).run(t, ctx)
    ctx.store.flush()
    return result, ctx


def full_expand(t, store: Store):
    """Everything ``ctxkit expand`` must put back: tool outputs (the ledger), archived entries,
    snipped turns and collapsed runs. (The helpers are idempotent, so this stays right once
    ``ctxkit.store.expand.expand`` calls them itself.)"""
    from ctxkit.store.expand import expand

    out, _ = expand(t, store)
    return uncollapse(unsnip(restore_archived(out, store)), store)


@SETTINGS
@given(case=cases())
def test_every_stage_keeps_the_view_valid_small_deterministic_and_expandable(tmp_path_factory, case):
    turns, fmt, gap, stage, options, force, window, rnd = case
    tmp = tmp_path_factory.mktemp("prop")
    entries = conversation(turns, fmt)
    t = read_transcript(write(tmp / "in.jsonl", entries))
    now = last_time(entries) + timedelta(minutes=gap)
    inputs = {"force": force, "window": window, "snip_ids": _snip_ids(t, rnd) if stage == "snip" else ()}
    before = t.view()
    store = tmp / "store"
    result, ctx = _run(stage, options, t, store, now, **dict(inputs))
    after = result.transcript.view()

    # a valid view
    assert pairing_problems(after.api_messages()) == [], (stage, options)
    # never grows (what a stage appends on purpose aside)
    if stage not in APPENDING_STAGES and not (force and stage in COMPACTING_STAGES):
        grown = ctx.tokens.count_messages(after.api_messages()) - ctx.tokens.count_messages(before.api_messages())
        # appended on purpose: the snip nudge; and tool-result-budget's short note for an empty output
        allowed = result.report.details.get("nudge_tokens", 0) + 12 * len(result.report.details.get("empty_notes", []))
        assert grown <= allowed + 8, (stage, options, result.report)
    # deterministic: a second run on the same input against the store the first one filled replays its
    # decisions to the same bytes (thinking dropped after cleared results included) ...
    replay, _ = _run(stage, options, t, store, now, **dict(inputs))
    assert written(replay.transcript) == written(result.transcript), (stage, options, replay.report)
    # ... and so does a run against a fresh store
    shutil.rmtree(store, ignore_errors=True)
    again, _ = _run(stage, options, t, store, now, **dict(inputs))
    assert written(again.transcript) == written(result.transcript)
    # nothing lost: expand brings the view back (plain lines that snip/thinking-strip removed are
    # only in the store: the report names the file)
    if stage in COMPACTING_STAGES:
        if fmt == "claude-code":  # plain formats: the compacting stage archives the lines and reports where
            kept = {json.dumps(result.transcript.entry(i), sort_keys=True) for i in result.transcript.live_indexes()}
            assert {json.dumps(e, sort_keys=True) for e in entries} <= kept
        return
    restored = full_expand(result.transcript, Store(store))
    if fmt == "claude-code":
        back = _without_nudge(restored.view().api_messages())
        if stage in APPENDING_STAGES:  # what it appended stays: the rest must be as before
            assert_extends(_without_nudge(before.api_messages()), back)
        else:
            assert back == _without_nudge(before.api_messages()), (stage, options, result.report)
        return
    # plain lines have no room for a pointer: what snip removed and the thinking a stage dropped are in
    # the store files the report names; everything else expand puts back
    present = {json.dumps(restored.entry(i), sort_keys=True) for i in restored.live_indexes()}
    for key in ("archive", "thinking_archive"):
        if key in result.report.details:
            archived = json.loads(Path(result.report.details[key]).read_text())
            present |= {json.dumps(e, sort_keys=True) for e in archived.values()}
    missing = [e for e in entries if json.dumps(e, sort_keys=True) not in present]
    assert missing == [], (stage, options, result.report)


def _without_nudge(messages: list[dict]) -> list[dict]:
    """Messages without the snip nudge (text the stage added, not something it took out), string contents
    as one text block: a nudge merged into a user message whose content was a string made it a list, the
    same message to the API."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [b for b in content if not (b.get("type") == "text" and NUDGE_HEAD in b.get("text", "")[:60])]
            if not content:
                continue
        out.append({**m, "content": [{"type": "text", "text": content}] if isinstance(content, str) else content})
    return out


# -- determinism of the whole pipeline against the same store ----------------------------------------
@st.composite
def pipelines(draw):
    """A policy running a random subset of the registered stages, in the default order, with random options."""
    order = ["tool-result-budget", "snip", "microcompact", "collapse", "autocompact", "attachments"]
    order += sorted(set(REGISTRY) - set(order))
    chosen = [s for s in order if s in REGISTRY and draw(st.booleans())] or [draw(st.sampled_from(sorted(REGISTRY)))]
    stages = [{"id": s, "options": draw(_options[s]) if s in _options else {}} for s in chosen]
    window = draw(st.sampled_from([None, 3_000, 9_000]))
    doc = {**_policy(chosen[0], {}, None), "stages": stages, "proactive": draw(st.sampled_from(["collapse",
                                                                                                 "autocompact"]))}
    if window:
        doc.update(context_window=window, max_output_tokens=200,
                   thresholds={"summary_reserve": 200, "autocompact_buffer": 500, "warning_buffer": 500,
                               "blocking_buffer": 100})
    return doc


@SETTINGS
@given(turns=_conversation, fmt=st.sampled_from(["claude-code", "anthropic"]), doc=pipelines(),
       gap=st.sampled_from([1, 90, 400]), force=st.booleans())
def test_the_pipeline_gives_the_same_bytes_twice_against_the_same_store(tmp_path_factory, turns, fmt, doc, gap,
                                                                         force):
    """Run 2 on the same input sees at every stage the view run 1 saw there: each decision is replayed by
    the stage that made it (tool-result-budget does not replay microcompact's clearing ahead of snip), and
    microcompact drops the same thinking whichever stage put its placeholder back."""
    tmp = tmp_path_factory.mktemp("twice")
    entries = conversation(turns, fmt)
    t = read_transcript(write(tmp / "in.jsonl", entries))
    now = last_time(entries) + timedelta(minutes=gap)
    policy = Policy.from_mapping(doc)
    runs = []
    for _ in range(2):
        ctx = context(doc, tmp / "store", now, force=force)
        result = compile_pipeline(policy).run(t, ctx)
        ctx.store.flush()
        runs.append(result)
    assert written(runs[1].transcript) == written(runs[0].transcript), [
        (a.id, a.action, a.reason, b.action, b.reason) for a, b in zip(runs[0].reports, runs[1].reports, strict=True)]


# -- the frozen prefix ------------------------------------------------------------------------------
def _append_turn(t, entries: list[dict], fmt: str, prompt: str, when: datetime):
    """The transcript with one more turn (a prompt and a short answer) written after it."""
    from ctxkit.transcript.claude_code.chain import leaf_uuid

    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    if fmt == "claude-code":
        parent = leaf_uuid(t)
        u = new_uuid("appended", prompt, stamp)
        a = new_uuid("appended-answer", prompt, stamp)
        new = [{"parentUuid": parent, "isSidechain": False, "type": "user", "uuid": u, "timestamp": stamp,
                "sessionId": "s-1", "message": {"role": "user", "content": prompt}},
               {"parentUuid": u, "isSidechain": False, "type": "assistant", "uuid": a, "timestamp": stamp,
                "sessionId": "s-1", "requestId": "req_new", "message": {"id": "msg_new", "role": "assistant",
                                                                        "content": [{"type": "text", "text": "Sure."}]}}]
    else:
        new = [{"role": "user", "content": prompt}, {"role": "assistant", "content": [{"type": "text", "text": "Sure."}]}]
    return t.with_edits(append=new)


_FULL = {"summarizer": {"use": "extractive"}, "proactive": "collapse",
         "tools": {"collapsible": ["Read", "Grep", "Glob", "LS"]},
         "stages": [{"id": "tool-result-budget"}, {"id": "snip", "options": {"nudge_every_tokens": 400}},
                    {"id": "microcompact", "options": {"keep_recent": 2}}, {"id": "collapse"}, {"id": "autocompact"},
                    {"id": "attachments"}]}


@SETTINGS
@given(turns=_conversation, fmt=st.sampled_from(["claude-code", "anthropic"]),
       gap=st.sampled_from([1, 120]), window=st.sampled_from([None, 3_000, 9_000]),
       proactive=st.sampled_from(["collapse", "autocompact"]))
def test_compacting_again_after_a_new_turn_keeps_the_earlier_view(tmp_path_factory, turns, fmt, gap, window,
                                                                    proactive):
    tmp = tmp_path_factory.mktemp("frozen")
    entries = conversation(turns, fmt)
    t0 = read_transcript(write(tmp / "in.jsonl", entries))
    small = {"context_window": window, "max_output_tokens": 200,  # buffers scaled down with the window
             "thresholds": {"summary_reserve": 200, "autocompact_buffer": 500, "warning_buffer": 500,
                            "blocking_buffer": 100}}
    doc = {**_FULL, "proactive": proactive, **(small if window else {})}
    doc["stages"] = [s for s in doc["stages"] if s["id"] in REGISTRY]
    policy = Policy.from_mapping(doc)
    now = last_time(entries) + timedelta(minutes=gap)
    first = compile_pipeline(policy).run(t0, context(doc, tmp / "store", now))
    t1 = read_transcript(write(tmp / "out1.jsonl", [first.transcript.entry(i)
                                                    for i in first.transcript.live_indexes()]))
    earlier = t1.view().api_messages()
    later_time = now + timedelta(minutes=2)
    t1b = _append_turn(t1, entries, fmt, "one more thing", later_time)
    second = compile_pipeline(policy).run(t1b, context(doc, tmp / "store", later_time + timedelta(seconds=10)))
    crossed = [r for r in second.reports if r.details.get("threshold_crossed")
               or (r.use not in ("tool-result-budget", "snip", "microcompact", "collapse") and r.action == "applied")]
    if crossed:
        return
    assert_extends(earlier, second.transcript.view().api_messages())


def assert_extends(earlier: list[dict], now: list[dict]) -> None:
    """``now`` is ``earlier`` with messages added at the end (the last earlier message may have grown at its end)."""
    assert len(now) >= len(earlier)
    assert now[:len(earlier) - 1] == earlier[:-1]
    if earlier:
        last_old, last_new = earlier[-1], now[len(earlier) - 1]
        assert last_new["role"] == last_old["role"]
        old_blocks, new_blocks = _as_blocks(last_old["content"]), _as_blocks(last_new["content"])
        assert new_blocks[:len(old_blocks)] == old_blocks


def _as_blocks(content) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def test_builder_makes_a_valid_conversation(tmp_path):
    turns = [Turn("task a", [[Call("Read", {"file_path": "/w/a.py"}, "x\n" * 5)],
                             [Call("Grep", {"pattern": "def"}, "a.py:1"), Call("Glob", {"pattern": "*"}, "a.py")]]),
             Turn("task b", [[Call("Edit", {"file_path": "/w/a.py"}, "ok")]], thinking=True)]
    for fmt in ("claude-code", "anthropic"):
        t = load(tmp_path, turns, fmt, name=f"{fmt}.jsonl")
        msgs = t.view().api_messages()
        assert pairing_problems(msgs) == []
        assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant",
                                             "user", "assistant", "user", "assistant"]
