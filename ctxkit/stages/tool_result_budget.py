r"""tool-result-budget: move oversized tool output to the store, leaving a preview in the view.

Large tool results, not chat text, are what fills a context window. This stage runs first, on
every run, and looks at each tool result on its own (no context threshold), the way Claude Code
does:

* **Per result**: a result over its tool's limit is saved to the store; the view keeps a
  `<persisted-output>` block with the stored file's path, the size and a preview (the first
  `preview_bytes`, 2,000, cut at a line end), worded as Claude Code words it. The limit is
  Claude Code's `min(tool limit, 50,000)`: `per_tool` gives a tool's own limit (Bash: 30,000, as
  Claude Code's Bash tool declares; your entries are added to that one), capped at
  `max_result_chars` (50,000), which is also the limit of every tool not named. Results of `exempt_tools` (`Read`: reading a
  persisted file back would loop) and images or documents are never persisted. A result whose
  preview would not be shorter stays as it is.
* **Per message**: when the tool results of one user message together exceed `max_message_chars`
  (200,000), the largest ones not yet seen are persisted until the rest fits.
* **Empty results the model has not read yet** (after the view's last assistant message) become a
  short note: `(Bash completed with no output)`, as Claude Code writes it when it makes the result.
  An empty result the model has already answered stays as it is: a note there would add tokens and
  change bytes the provider's prompt cache holds (Claude Code never rewrites it either).
* **Frozen decisions**: once the model has seen a result (in full, or as a preview) that decision
  never changes: the ledger in the store remembers each tool_use id (per session: transcripts
  sharing a store may reuse ids, see `ctxkit.store.offload.decision_scope`), and a replacement is
  replayed with exactly the same bytes, so running `compact` again on a grown transcript leaves
  the earlier view byte-identical (the provider's prompt cache stays warm). Only this stage's
  own replacements are replayed here; a later stage's (microcompact's placeholder) is replayed by
  that stage, so every stage of a second run sees the view it saw the first time. A changed
  limit applies to results not decided yet, and the report says which earlier decisions it would
  not make (`1 result(s) keep an earlier run's decision that this policy would not make ...`;
  `frozen_unlike_policy` in `--report json`); `ctxkit compact --fresh` decides every result again
  under the current policy (one cold prompt cache: docs/policies.md).

## Before and after

On `examples/session.jsonl` (the README's worked example), a 177,020-character test log and an
empty `git status` the model has already answered:

```
before
assistant  tool_use Bash(python -m pytest -vv 2>&1 | tee test.log)
user       tool_result "tests/test_models.py::test_case_00001 PASSED        [  0%]\n..."   (177,020 characters)
assistant  tool_use Bash(git status --porcelain)
user       tool_result ""

after
assistant  tool_use Bash(python -m pytest -vv 2>&1 | tee test.log)
user       tool_result "<persisted-output>
                        Output too large (172.9KB). Full output saved to: /tmp/readme-ex/.ctxkit/blobs/ca/cab01d9adda451fe66c0d3f3ef9691d8a6cc01ed59acdec5fae44bf05db37436.txt

                        Preview (first 2KB):
                        tests/test_models.py::test_case_00001 PASSED        [  0%]
                        ...
                        </persisted-output>"
assistant  tool_use Bash(git status --porcelain)
user       tool_result ""
```

The report says `tool-result-budget: applied: persisted 1 result(s), replayed 0, noted 0 empty`;
a second run on the same session says `replayed 1`: the persisted log's preview comes back byte for
byte; microcompact replays its own clearings at its place, so every stage sees the view it saw the
first time. Had the session ended with the empty result, before the model's answer, it would have
the note (`noted 1 empty`), and every later run, on the session grown past it, would replay it.

`ctxkit expand compacted.jsonl -o restored.jsonl` writes the transcript back with the full
outputs (here byte-identical to the input).

## When it does nothing, or fails

When nothing is over a limit the report says `nothing-to-do (every tool result is within
budget)`. If the store cannot be written, the command stops before writing any output, with exit
code 2 and a message naming the path: a result is never replaced without its copy.
Two results that answer one tool id (an agent that used a call id twice) are left whole: the store
keeps one decision per tool id, so replacing both would keep only one of the two originals.
"""
from __future__ import annotations

from typing import Any

from ..store.offload import (
    content_absent,
    content_digest,
    content_size,
    content_text,
    decision_applies,
    decision_scope,
    has_media,
    is_empty,
    original_bytes,
    original_content,
    persisted_message,
    store_original,
)
from ..transcript.edits import replace_blocks, written_results
from ..transcript.model import Transcript
from ..transcript.view import BlockRef
from .base import Context, Stage, StageResult


class ToolResultBudget(Stage):
    name = "tool-result-budget"
    summary = "Persist oversized tool results to the store with a preview; frozen decisions."
    options_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_result_chars": {"type": "integer", "minimum": 1, "default": 50_000,
                                 "description": "A single tool result above this many characters is persisted."},
            "per_tool": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
                         "default": {"Bash": 30_000},
                         "description": "Per-tool limits, each capped at max_result_chars (Claude Code's "
                                        "min(tool limit, 50,000)); entries are added to these defaults."},
            "exempt_tools": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "default": ["Read"],
                             "description": "Tools whose results are never persisted (reading them back would loop)."},
            "max_message_chars": {"type": "integer", "minimum": 1, "default": 200_000,
                                  "description": "Aggregate budget for the tool results of one user message."},
            "preview_bytes": {"type": "integer", "minimum": 0, "default": 2_000,
                              "description": "How much of a persisted output the preview shows."},
            "empty_note": {"type": "string", "default": "({tool} completed with no output)",
                           "description": "What an empty result becomes; {tool} is the tool's name."},
        },
    }

    def run(self, t: Transcript, ctx: Context) -> StageResult:
        view = t.view()
        names = view.tool_names()
        shared = view.shared_result_ids()  # (left whole: their originals could not be told apart in the store)
        changes: dict[BlockRef, dict] = {}
        persisted: list[str] = []
        replayed: list[str] = []
        noted_empty: list[str] = []
        unlike: list[str] = []  # earlier decisions replayed here that this policy would not make
        store = ctx.store
        scope = decision_scope(t)
        #: the blocks a decision of the ledger applied to when this run looked (by identity: the view holds them);
        #: unless this run recorded another for their tool id, they need no "seen" record below
        known: set[int] = set()
        # the results the previous run left as they were under a decision of the ledger (by identity: a replay runs
        # the stage at every request over a view that shares its blocks): the same block under the same decision
        # object, of the same tool, is left as it is again, with the size and the note it had
        frozen_before: dict[int, tuple] = self.__dict__.get("_frozen", {})
        frozen: dict[int, tuple] = {}
        # results before the last assistant message have been read by the model as they are: an empty one keeps
        # its bytes (a note there would grow the view and rewrite the prompt cache from that point)
        answered = next((i for i in range(len(view.messages) - 1, -1, -1) if view.messages[i].role == "assistant"), -1)
        for index, msg in enumerate(view.messages):
            if msg.role != "user":
                continue
            fresh: list[tuple[int, int]] = []  # (block index, size) still eligible for the aggregate budget
            total = 0
            blocks = written_results(t, msg)  # (a result as written: a hook's context folded in is none of it)
            for k, block in enumerate(blocks):
                if block.get("type") != "tool_result":
                    continue
                ref = msg.refs[k]
                tid = block.get("tool_use_id", "")
                if tid in shared:
                    continue
                content = block.get("content")
                decision = store.decision(tid, scope=scope)
                before = frozen_before.get(id(block))
                if before is not None and before[0] is block and decision is not None and before[1] is decision \
                        and before[2] == names.get(tid, ""):
                    known.add(id(block))
                    frozen[id(block)] = before
                    total += before[3]
                    if before[4]:
                        unlike.append(tid)
                    continue
                if decision and not decision_applies(decision, content, store.digests):
                    decision = None  # the same tool id in another conversation: this result is fresh
                if decision:
                    known.add(id(block))
                own = _own_decision(decision)
                if own is not None:
                    # the frozen replacement, unless a later stage's (microcompact's placeholder) shows already
                    shown = content if content == decision.get("replacement") else own["replacement"]
                    if ref is not None and content != shown:
                        changes[ref] = {**block, "content": shown}
                        replayed.append(tid)
                        if own.get("blob") and not self._would_persist(names.get(tid, ""), content, store):
                            unlike.append(tid)  # the input shows the original: this policy would keep it
                    total += content_size(shown)
                    continue
                size = content_size(content)
                total += size
                if decision or ref is None:
                    odd = bool(decision) and decision.get("state") == "seen" and self._would_persist(
                        names.get(tid, ""), content, store)
                    if odd:
                        unlike.append(tid)  # seen in full before a lower limit: frozen all the same
                    if decision:
                        frozen[id(block)] = (block, decision, names.get(tid, ""), size, odd)
                    continue  # seen in full before: frozen
                tool = names.get(tid, "")
                if index > answered and is_empty(content) and not has_media(content):
                    note = self.options["empty_note"].format(tool=tool or "Tool")
                    changes[ref] = {**block, "content": note}
                    original = original_content(t, ref, block)
                    if original is None and t.format != "openai":
                        original = ""
                    record = {"state": "replaced", "replacement": note, "blob": "", "original":
                              "json" if isinstance(original, list) else "text", "by": self.id,
                              "empty": original, "accepts": [content_digest(content)]}
                    if content_absent(t, ref, block):
                        record["absent"] = True  # no ``content`` key at all: expand gives none back
                    store.record_decision(tid, record, scope=scope)
                    total += len(note) - size
                    noted_empty.append(tid)
                    continue
                if has_media(content) or tool in self.options["exempt_tools"]:
                    continue
                if size > self._limit(tool):
                    saved = self._persist(t, block, ref, tid, changes, store, scope)
                    if saved is not None:
                        total += saved - size
                        persisted.append(tid)
                    continue
                fresh.append((k, size))
            # aggregate budget: largest fresh results first
            for k, size in sorted(fresh, key=lambda x: (-x[1], x[0])):
                if total <= self.options["max_message_chars"]:
                    break
                block = blocks[k]
                saved = self._persist(t, block, msg.refs[k], block["tool_use_id"], changes, store, scope)
                if saved is not None:
                    total += saved - size
                    persisted.append(block["tool_use_id"])
        # everything the model is about to see in full is frozen from now on
        recorded = {*persisted, *noted_empty}  # the tool ids whose decision this run wrote
        for msg in view.messages:
            for k, block in enumerate(written_results(t, msg)):
                if block.get("type") == "tool_result" and msg.refs[k] not in changes:
                    tid = block.get("tool_use_id", "")
                    if tid in shared:
                        continue
                    if id(block) in known and tid not in recorded:
                        continue  # (its decision applies: looked up above)
                    content = block.get("content")
                    if tid and not decision_applies(store.decision(tid, scope=scope), content, store.digests):
                        seen = {"state": "seen", "accepts": [content_digest(content, store.digests)]}
                        store.record_decision(tid, seen, scope=scope)
        self._frozen = frozen  # (the blocks of this view only: what the next run may meet again)
        new = replace_blocks(t, changes)
        action = "applied" if changes else "nothing-to-do"
        details: dict[str, Any] = {"persisted": persisted, "replayed": replayed, "empty_notes": noted_empty,
                                   "store": str(store.root), "scope": scope}
        reason = (f"persisted {len(persisted)} result(s), replayed {len(replayed)}, noted {len(noted_empty)} empty"
                  if changes else "every tool result is within budget")
        if unlike:
            details["frozen_unlike_policy"] = unlike
            reason += (f"; {len(unlike)} result(s) keep an earlier run's decision that this policy would not make "
                       "(persisted under a lower limit, or seen in full under a higher one): decisions are frozen, "
                       "`compact --fresh` makes them again")
        return StageResult(new, self.report(action=action, reason=reason, details=details))

    def _would_persist(self, tool: str, content: Any, store) -> bool:
        """Whether this policy would persist a result of ``tool`` with this content on its own (the
        per-message budget aside): over the tool's limit, neither media nor of an exempt tool, and
        longer than its preview would be (as :meth:`_persist` decides)."""
        if has_media(content) or tool in self.options["exempt_tools"] or content_size(content) <= self._limit(tool):
            return False
        text = content_text(content)
        data, suffix, _ = original_bytes(content)
        return len(persisted_message(text, str(store.blob_path(data, suffix)), self.options["preview_bytes"])) < len(text)

    def _limit(self, tool: str) -> int:
        """The tool's own limit (the defaults, then ``per_tool``), capped at the global ``max_result_chars``
        (worked out once per tool: a replay asks about every result at every request)."""
        limits = self.__dict__.setdefault("_limits", {})
        found = limits.get(tool)
        if found is None:
            per_tool = {**self.options_schema["properties"]["per_tool"]["default"], **self.options["per_tool"]}
            cap = int(self.options["max_result_chars"])
            found = limits[tool] = min(int(per_tool.get(tool, cap)), cap)
        return found

    def _persist(self, t: Transcript, block: dict, ref: BlockRef | None, tid: str, changes: dict, store,
                 scope: str) -> int | None:
        """Persist one result; returns the size of its replacement, or None when a preview would not be
        shorter than the result itself (tiny limits): then the result stays as it is."""
        text = content_text(block.get("content"))
        original = original_content(t, ref, block)  # an OpenAI line's own content, as written
        data, suffix, _ = original_bytes(original)
        if len(persisted_message(text, str(store.blob_path(data, suffix)), self.options["preview_bytes"])) >= len(text):
            return None
        blob, kind = store_original(store, original)
        replacement = persisted_message(text, blob, self.options["preview_bytes"])
        if ref is not None:
            changes[ref] = {**block, "content": replacement}
        store.record_decision(tid, {"state": "replaced", "replacement": replacement, "blob": blob, "original": kind,
                                    "accepts": [content_digest(block.get("content"))], "by": self.id}, scope=scope)
        return len(replacement)


def _own_decision(decision: dict | None) -> dict | None:
    """This stage's replacement in a ledger record: the record itself (``replaced``), or the one a later
    stage built on (microcompact clearing a persisted preview keeps it as ``earlier``).

    A decision another stage made alone (a ``cleared`` result the budget had left whole) is not
    replayed here but by that stage, at its place in the pipeline: a second run on the same input
    then shows every stage the view it saw the first time, so every stage decides the same way."""
    if not decision:
        return None
    own = decision if decision.get("state") == "replaced" else decision.get("earlier")
    return own if isinstance(own, dict) and own.get("state") == "replaced" and "replacement" in own else None
