"""Broken Claude Code sessions, each made the way it happens in practice, for ``ctxkit doctor``'s tests.

Every fixture starts from a healthy session (:func:`healthy`: two turns with tool calls, written by
:mod:`tests.builders`) and breaks it as an agent or a person does: a turn cut by a crash, a line
dropped, an image pasted, the model switched... Each returns the entries and the 1-based line where
the breakage is (where ``doctor`` must point).
"""
from __future__ import annotations

import base64
import copy
import struct
import zlib

from builders import Call, Turn, conversation, entry

SIG = "E" + "s" * 300  # a signature of a real one's length (they are a few hundred base64 characters)


def healthy() -> list[dict]:
    turns = [Turn("List the files", [[Call("Bash", {"command": "ls"}, "a.py\nb.py")]], "Two files."),
             Turn("Read a.py", [[Call("Read", {"file_path": "a.py"}, "print('a')")]], "It prints a.")]
    entries = conversation(turns)
    for e in entries:  # the model a session of today runs on
        if e["type"] == "assistant":
            e["message"]["model"] = "claude-opus-4-6"
    return entries


def _line_of(entries: list[dict], pred) -> int:
    return next(n for n, e in enumerate(entries, 1) if pred(e))


def _append_prompt(entries: list[dict], text: str, **extra) -> dict:
    last = entries[-1]
    e = entry("user", {"role": "user", "content": text}, uuid=f"u-{len(entries)}", parent=last["uuid"],
              cwd="/work", **extra)
    entries.append(e)
    return e


def png(width: int, height: int, pad: int = 0) -> bytes:
    """A PNG of this size in pixels (its header; the image data is a stub, ``pad`` bytes long)."""
    ihdr = struct.pack(">II", width, height) + b"\x08\x02\x00\x00\x00"
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    data = b"\x00" * pad
    idat = struct.pack(">I", len(data)) + b"IDAT" + data + struct.pack(">I", zlib.crc32(b"IDAT" + data))
    return b"\x89PNG\r\n\x1a\n" + chunk + idat + b"\x00\x00\x00\x00IEND\xaeB`\x82"


def pdf(pages: int) -> bytes:
    """A PDF of ``pages`` empty pages."""
    kids = " ".join(f"{3 + k} 0 R" for k in range(pages))
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>"]
    objs += ["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    body = b"%PDF-1.4\n" + b"".join(f"{n + 1} 0 obj\n{o}\nendobj\n".encode() for n, o in enumerate(objs))
    return body + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"


def image_block(raw: bytes) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": base64.b64encode(raw).decode()}}


# -- the breakages ------------------------------------------------------------------------------------
def crash_mid_turn() -> tuple[list[dict], int]:
    """Claude Code died while a tool ran: the tool_use was written, its result never was; the user
    started again and typed on (the new prompt hangs off the tool_use)."""
    entries = healthy()
    k = next(k for k, e in enumerate(entries) if e["type"] == "user" and isinstance(e["message"]["content"], list)
             and e["message"]["content"][0].get("type") == "tool_result")
    del entries[k:]  # the result and everything after it never reached the file
    line = len(entries)
    _append_prompt(entries, "Where were we?")
    return entries, line


def lost_parallel_result() -> tuple[list[dict], int]:
    """Two parallel calls; the crash lost the second one's result line, and the session went on."""
    turns = [Turn("Check both", [[Call("Read", {"file_path": "a.py"}, "A"), Call("Read", {"file_path": "b.py"}, "B")]],
                  "Both read.")]
    entries = conversation(turns)
    uses = [n for n, e in enumerate(entries) if e["type"] == "assistant"
            and e["message"]["content"][0].get("type") == "tool_use"]
    results = [n for n, e in enumerate(entries) if e["type"] == "user" and isinstance(e["message"]["content"], list)]
    lost = entries[results[1]]
    later = [e for e in entries if e.get("parentUuid") == lost["uuid"]]
    for e in later:
        e["parentUuid"] = lost["parentUuid"]
    del entries[results[1]]
    return entries, uses[1] + 1


def dropped_line() -> tuple[list[dict], int]:
    """A line in the middle was lost (a sync tool, a hand edit): the next line's parent names no line."""
    entries = healthy()
    k = _line_of(entries, lambda e: e["type"] == "assistant" and e["message"]["content"][0].get("type") == "text")
    del entries[k - 1]
    return entries, k  # the line after the dropped one now sits at its number


def dropped_tool_use() -> tuple[list[dict], int]:
    """The line holding a tool_use was lost, but the line with its result was kept (re-linked by hand)."""
    entries = healthy()
    k = _line_of(entries, lambda e: e["type"] == "assistant" and e["message"]["content"][0].get("type") == "tool_use")
    gone = entries.pop(k - 1)
    for e in entries:
        if e.get("parentUuid") == gone["uuid"]:
            e["parentUuid"] = gone["parentUuid"]
    return entries, k


def dropped_result_line() -> tuple[list[dict], int]:
    """The line holding a tool_result was lost: the next line's parent names no line, and once it is linked
    again, the call before it is unanswered (two assistant messages in a row)."""
    entries = healthy()
    results = [i for i, e in enumerate(entries) if e["type"] == "user" and isinstance(e["message"]["content"], list)]
    del entries[results[-1]]
    return entries, results[-1] + 1  # the answer that followed it now sits at its number


def pasted_huge_image() -> tuple[list[dict], int]:
    """The user pasted a screenshot over 5 MB (base64) into the prompt."""
    entries = healthy()
    _append_prompt(entries, None)
    entries[-1]["message"]["content"] = [{"type": "text", "text": "What is wrong here?"},
                                         image_block(png(1200, 800, pad=4_000_000))]
    return entries, len(entries)


def pasted_wide_image() -> tuple[list[dict], int]:
    """A panorama screenshot wider than 8000 px."""
    entries = healthy()
    _append_prompt(entries, None)
    entries[-1]["message"]["content"] = [{"type": "text", "text": "Look"}, image_block(png(9000, 400))]
    return entries, len(entries)


def many_images() -> tuple[list[dict], int]:
    """Screenshot after screenshot: 21 images, one of them 2500 px wide (fine alone, not among many)."""
    entries = healthy()
    line = 0
    for k in range(21):
        _append_prompt(entries, None)
        entries[-1]["message"]["content"] = [{"type": "text", "text": f"shot {k}"},
                                             image_block(png(2500 if k == 3 else 800, 600))]
        if k == 3:
            line = len(entries)
        entries.append(entry("assistant", {"id": f"msg_img{k}", "type": "message", "role": "assistant",
                                           "model": "claude-opus-4-6", "content": [{"type": "text", "text": "Seen."}]},
                             uuid=f"a-img{k}", parent=entries[-1]["uuid"], cwd="/work"))
    return entries, line


def long_pdf() -> tuple[list[dict], int]:
    """A 120-page PDF attached to a prompt."""
    entries = healthy()
    _append_prompt(entries, None)
    entries[-1]["message"]["content"] = [
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": base64.b64encode(pdf(120)).decode()}},
        {"type": "text", "text": "Summarize it"}]
    return entries, len(entries)


def empty_text() -> tuple[list[dict], int]:
    """A hook wrote an empty text block into the prompt."""
    entries = healthy()
    _append_prompt(entries, None)
    entries[-1]["message"]["content"] = [{"type": "text", "text": "Go on"}, {"type": "text", "text": ""}]
    return entries, len(entries)


def whitespace_text() -> tuple[list[dict], int]:
    entries = healthy()
    _append_prompt(entries, None)
    entries[-1]["message"]["content"] = [{"type": "text", "text": "Go on"}, {"type": "text", "text": "\n\n"}]
    return entries, len(entries)


def assistant_empty_text() -> tuple[list[dict], int]:
    """The model's answer was saved as an empty text block (a stream cut before its first character): the
    view leaves it out, and with it the message, so the user messages around it merge."""
    entries = healthy()
    k = _line_of(entries, lambda e: e["type"] == "assistant" and e["message"]["content"][0].get("type") == "text")
    entries[k - 1]["message"]["content"] = [{"type": "text", "text": ""}]
    return entries, k


def assistant_whitespace_text() -> tuple[list[dict], int]:
    """The model's answer is whitespace only: left out of the view like an empty one."""
    entries = healthy()
    k = _line_of(entries, lambda e: e["type"] == "assistant" and e["message"]["content"][0].get("type") == "text")
    entries[k - 1]["message"]["content"] = [{"type": "text", "text": " \n"}]
    return entries, k


def trailing_whitespace() -> tuple[list[dict], int]:
    """The last answer, cut while it streamed, ends with a newline: the next request ends with it."""
    entries = healthy()
    entries[-1]["message"]["content"][-1]["text"] = "It prints a.\n"
    return entries, len(entries)


def model_switched() -> tuple[list[dict], int]:
    """A thinking block written by one model in the turn in progress (before its tool call); the turn went on
    with another model (a fallback): the tool loop must send that block back, to a model that did not sign it."""
    entries = healthy()
    k = _line_of(entries, lambda e: e["type"] == "assistant" and e["message"]["content"][0].get("type") == "tool_use"
                 and e["message"]["content"][0].get("name") == "Read")
    _think_before(entries, k, "They want the file.")
    return entries, k


def _think_before(entries: list[dict], k: int, thought: str) -> None:
    """Insert, before line ``k - 1``, a thinking line another model (Sonnet 4.5) signed, chained in; line ``k``
    (then the answer after it) names that model too."""
    think = copy.deepcopy(entries[k - 1])
    think["message"]["content"] = [{"type": "thinking", "thinking": thought, "signature": SIG}]
    think["uuid"] = "think-1"
    think["parentUuid"] = entries[k - 1]["parentUuid"]
    think["message"]["model"] = "claude-sonnet-4-5"
    entries[k - 1]["parentUuid"] = "think-1"
    entries.insert(k - 1, think)
    entries[k]["message"]["model"] = "claude-sonnet-4-5"


def model_switched_earlier() -> list[dict]:
    """A thinking block another model wrote in an earlier turn: the API strips it unread (real sessions went on
    after Claude Code fell back from Opus 4.1 to Sonnet 4 with the Opus thinking in their history)."""
    entries = healthy()
    k = _line_of(entries, lambda e: e["type"] == "assistant" and e["message"]["content"][0].get("type") == "text")
    _think_before(entries, k, "They want a count.")
    return entries


def truncated_signature() -> tuple[list[dict], int]:
    """A thinking block whose signature was cut short when it was saved."""
    entries, line = model_switched()
    for e in entries:
        if e["type"] == "assistant":
            e["message"]["model"] = "claude-opus-4-6"
    entries[line - 1]["message"]["content"][0]["signature"] = "EsQCCkYICBgCKkA"
    return entries, line


def parent_loop() -> tuple[list[dict], int]:
    """An edit made an entry its own ancestor: the first prompt's parent is the last line."""
    entries = healthy()
    entries[0]["parentUuid"] = entries[-1]["uuid"]
    return entries, 1


def torn_line() -> tuple[list[dict], int]:
    """Two processes wrote at once: a line holds half of an entry (not JSON)."""
    entries = healthy()
    return entries, 3


def duplicate_ids() -> tuple[list[dict], int]:
    """A session stitched from two copies: the same tool_use id answered twice."""
    entries = healthy()
    uses = [e for e in entries if e["type"] == "assistant" and e["message"]["content"][0].get("type") == "tool_use"]
    results = [e for e in entries if e["type"] == "user" and isinstance(e["message"]["content"], list)]
    uses[1]["message"]["content"][0]["id"] = uses[0]["message"]["content"][0]["id"]
    results[1]["message"]["content"][0]["tool_use_id"] = uses[0]["message"]["content"][0]["id"]
    return entries, entries.index(uses[1]) + 1


def lines_of(entries: list[dict], torn_at: int | None = None) -> bytes:
    import json

    out = []
    for n, e in enumerate(entries, 1):
        text = json.dumps(e)
        out.append(text[: len(text) // 2] if n == torn_at else text)
    return "".join(x + "\n" for x in out).encode()


#: note rule -> fixture (entries, line): what the agent's resume repairs itself, reported and repaired
NOTED = {
    "assistant-empty-text": assistant_empty_text,
    "assistant-whitespace-text": assistant_whitespace_text,
}

#: problem rule -> fixture (entries, line)
BROKEN = {
    "orphan-tool-use": crash_mid_turn,
    "orphan-tool-use ": lost_parallel_result,
    "parent-missing": dropped_line,
    "parent-missing ": dropped_result_line,
    "orphan-tool-result": dropped_tool_use,
    "image-too-large": pasted_huge_image,
    "image-too-many-pixels": pasted_wide_image,
    "image-too-many-pixels-among-many": many_images,
    "pdf-too-many-pages": long_pdf,
    "empty-text": empty_text,
    "whitespace-text": whitespace_text,
    "final-trailing-whitespace": trailing_whitespace,
    "thinking-model-changed": model_switched,
    "thinking-signature-truncated": truncated_signature,
    "parent-cycle": parent_loop,
    "unparseable-line": torn_line,
    "duplicate-tool-use-id": duplicate_ids,
}
