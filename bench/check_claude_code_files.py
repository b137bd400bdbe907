#!/usr/bin/env python3
"""Run issue 27's done-when checks on real Claude Code sessions and print one row per session.

    nice python bench/check_claude_code_files.py DIR_OR_FILE... [--json] [--jobs N] [--sample N]

For Claude Code transcripts found where their users committed them (none is kept in this
repository). Every main session below the arguments (subagent files, ``agent-*.jsonl`` or under
``subagents/``, are read beside their session by ``simulate`` and not checked alone) goes through the
ctxkit of this interpreter, the commands run as a user would run them (the helpers of
``check_real_files.py``, which does the same for other agents' files):

1. ``simulate --json``: the ``replayed`` row within 10% of the recorded one on cost, cache reads and
   cache writes (``calibration.off`` empty); on a session that made a request after one of its own
   compactions, ``none``'s peak above the recorded peak.
2. ``compact --force --report json``, with the default policy and with ``-p no-llm``: exit 0; no
   stage that took content out reports more tokens after than before; ``stats`` of the output (same
   policy) counts what compact's report ends with; the budget is the session's model's (``stats``
   names the model of the session's last request, and compact's autocompact used its window).
   With ``-p no-llm``, when it compacted, the output's view quotes verbatim every prompt the user typed
   (``prompts``: quoted of typed, ``+Nr`` quoted with a secret in them redacted; a custom command's expansion
   aside). A miss is not a failure: a paste the
   compaction could not keep whole and still shrink is cut, a secret is redacted, an image is a block
   of its own (docs/summarizer.md).
3. the ``no-llm`` output through ``expand``: byte for byte the input (followed only by the lines the
   compaction appended, which a Claude Code session keeps: docs/store.md); ``doctor`` exits 0 and
   ``view --to anthropic-request`` exits 0 with every ``tool_use`` answered by the next message (a call
   in the view's last message is the turn in progress).

A file with a line ctxkit cannot read must be refused naming the file and line (exit 3); the checks
then go on with ``--on-bad-line skip`` (``simulate`` too: the line is left out of every row). A session
whose replay is more than 10% out is marked ``!`` but is not a failure of the tool: docs/simulate.md
says why each is out. The exit status is 1 when any session failed another check.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_real_files import crashed, ctxkit, view_calls  # noqa: E402

from ctxkit.summarize.secret_values import MARKER_RE  # noqa: E402  (the marker redaction writes)

POLICIES = ("default", "no-llm")


def main_sessions(paths: list[Path]) -> list[Path]:
    """The main-session transcripts below ``paths`` (subagent files are their sessions' business)."""
    found: list[Path] = []
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("*.jsonl"))
        found += [f for f in files if not f.name.startswith("agent-") and "subagents" not in f.parts
                  and ".ctxkit" not in f.parts and b'"type":"assistant"' in f.read_bytes()]
    return found


def last_model(path: Path) -> str | None:
    """The model of the session's last real request, read from the file itself."""
    model = None
    for line in path.read_bytes().splitlines():
        if b'"assistant"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "assistant" and not entry.get("isSidechain") and isinstance(message, dict) \
                and message.get("model") and message["model"] != "<synthetic>":
            model = message["model"]
    return model


def appended_by_compaction(line: bytes) -> bool:
    """A line a compaction adds after the history: its boundary, summary, re-read files, its record."""
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and (entry.get("subtype") == "compact_boundary" or entry.get("type") in (
        "ctxkit-record", "attachment") or bool(entry.get("isCompactSummary")) or bool(entry.get("isMeta"))
        or bool(entry.get("isVisibleInTranscriptOnly")))


def took_out(stage: dict) -> bool:
    """Whether a stage took content out of the view: tool-result-budget's notes on empty results add a
    line (as Claude Code does) and take nothing out; its persisted and replayed results do."""
    details = stage.get("details") if isinstance(stage.get("details"), dict) else {}
    if stage.get("use") == "tool-result-budget":
        return bool(details.get("persisted") or details.get("replayed"))
    return stage.get("action") == "applied"


def request_after_compaction(path: Path) -> bool:
    """Whether the session made a request after one of its own compactions (a ``compact_boundary``, or
    Claude Code 1.0's summary that starts the chain anew, after a request: one before any compacted the
    history of an earlier file), read from the file itself."""
    answered = compacted = False
    for line in path.read_bytes().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        if answered and (entry.get("subtype") == "compact_boundary"
                         or entry.get("isCompactSummary") and entry.get("parentUuid") is None):
            compacted = True
        elif entry.get("type") == "assistant" and (entry.get("message") or {}).get("model") != "<synthetic>":
            if compacted:  # (a request the API answered; Claude Code writes its own errors as "<synthetic>")
                return True
            answered = True
    return False


def json_report(stderr: bytes) -> dict | None:
    """The JSON object ``--report json`` prints on stderr (warnings may come before it)."""
    text = stderr.decode(errors="replace")
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    try:
        return json.loads(text[start:])
    except ValueError:
        return None


def tail(run) -> str:
    return run.stderr.decode(errors="replace").strip()[-240:]


def check_simulate(path: Path, work: Path, row: dict, timeout: float) -> None:
    """Check 1: the replay's calibration and ``none``'s peak."""
    if row.get("refused"):  # refused by default as stats refused it, naming the file and line
        run = ctxkit(["simulate", "--json", str(path)], work, timeout)
        if run.returncode != 3 or crashed(run) or f"{path}:" not in run.stderr.decode(errors="replace"):
            row["problems"].append(f"simulate without --on-bad-line skip: exit {run.returncode}: {tail(run)}")
    run = ctxkit(["simulate", "--json", *row["skip"], str(path)], work, timeout)
    if run.returncode != 0 or crashed(run):
        row["problems"].append(f"simulate exit {run.returncode}: {tail(run)}")
        return
    session = json.loads(run.stdout)["sessions"][0]
    err, recorded = session["calibration"]["relative_error"], session["recorded"]
    row.update(requests=recorded["requests"], compactions=recorded["compactions"], model=session["model"],
               cost=err["cost_usd"], reads=err["cache_read_input_tokens"],
               writes=err["cache_creation_input_tokens"], off=session["calibration"]["off"],
               peak_none=session["none"]["peak_context"], peak_recorded=recorded["peak_context"])
    if recorded["compactions"] and request_after_compaction(path) \
            and session["none"]["peak_context"] <= recorded["peak_context"]:
        row["problems"].append(f"none's peak {session['none']['peak_context']:,} not above the recorded "
                               f"{recorded['peak_context']:,} on a session that compacted")


def check_compact(path: Path, work: Path, policy: str, row: dict, timeout: float) -> Path | None:
    """Check 2 under one policy; the output's path when compact wrote one."""
    out, store = work / f"{policy}.jsonl", work / f"store-{policy}"
    run = ctxkit(["compact", "--force", "-p", policy, "--store", str(store), "--report", "json",
                  *row["skip"], str(path), "-o", str(out)], work, timeout)
    report = json_report(run.stderr)
    if run.returncode != 0 or report is None:
        row["problems"].append(f"compact -p {policy} exit {run.returncode}: {tail(run)}")
        return None
    for stage in report["stages"]:
        if took_out(stage) and stage["tokens_after"] > stage["tokens_before"]:
            row["problems"].append(f"{policy}: {stage['id']} took content out but reports "
                                   f"{stage['tokens_before']:,} -> {stage['tokens_after']:,}")
    stats = ctxkit(["stats", "--json", "-p", policy, "--store", str(store), *row["skip"], str(out)], work, timeout)
    try:
        counted = json.loads(stats.stdout)
    except ValueError:
        row["problems"].append(f"stats of the {policy} output exit {stats.returncode}: {tail(stats)}")
        return out
    if counted["tokens"] != report["tokens_after"]:
        row["problems"].append(f"{policy}: stats counts {counted['tokens']:,}, compact ended at "
                               f"{report['tokens_after']:,}")
    model = last_model(path)
    if model and counted["budget"]["model"] != model:
        row["problems"].append(f"{policy}: budget of {counted['budget']['model']}, the session's model is {model}")
    windows = {s["details"].get("context_window") for s in report["stages"]
               if s["id"] == "autocompact" and isinstance(s.get("details"), dict)} - {None}
    if windows and windows != {counted["budget"]["context_window"]}:
        row["problems"].append(f"{policy}: autocompact used a window of {windows}, the model's is "
                               f"{counted['budget']['context_window']:,}")
    row[f"{policy}_tokens"] = f"{report['tokens_before']:,}->{report['tokens_after']:,}"
    compacted = any(s["use"] == "autocompact" and s["action"] == "applied" for s in report["stages"])
    if policy == "no-llm" and compacted:  # (else the view is the agent's own: its own summary, if any)
        view = ctxkit(["view", "--store", str(store), *row["skip"], str(out)], work, timeout)
        said = view_text(view.stdout) if view.returncode == 0 else ""
        typed = typed_prompts(path)
        row["prompts"] = f"{sum(p in said for p in typed)}/{len(typed)}"
        # a secret in a prompt is redacted in the summary (docs/security.md): quoted, but not byte for byte
        redacted = [p for p in typed if p not in said and quoted_but_secrets(p, said)]
        if redacted:
            row["prompts_redacted"] = len(redacted)
    return out


def typed_prompts(path: Path) -> list[str]:
    """The prompts a person typed in the session (``ctxkit.transcript.prompts.session_prompts``), a custom
    command's expansion aside: the command's words, not the user's (its command line is quoted)."""
    from ctxkit.transcript import read_transcript
    from ctxkit.transcript.prompts import session_prompts, slash_command

    t = read_transcript(str(path), on_bad_line="skip")
    out = []
    for p in session_prompts(t):
        before = [i for i in range(p.entry) if t.peek(i).get("type") == "user"]
        echo = t.peek(before[-1]) if before else {}
        text = echo.get("message", {}).get("content") if isinstance(echo.get("message"), dict) else None
        if not (isinstance(text, str) and slash_command(text) is not None):
            out.append(p.text)
    return out


def prompts_column(row: dict) -> str:
    """``quoted/typed``, and ``+Nr`` for the N quoted with a secret redacted."""
    redacted = row.get("prompts_redacted")
    return row.get("prompts", "-") + (f"+{redacted}r" if redacted else "")


def quoted_but_secrets(prompt: str, said: str) -> bool:
    """Whether ``said`` quotes ``prompt`` word for word but for secrets, each replaced by its marker
    (docs/security.md): after a marker the quote goes on where the prompt does."""
    # where the quote may begin: at the prompt's opening (its first 20 characters, or 6 when a secret
    # comes that early), or at a marker when the prompt begins with its secret
    opening = next((prompt[:n] for n in (20, 6) if prompt[:n] in said), None)
    starts = ([m.start() for m in re.finditer(re.escape(opening), said)][:100] if opening else []) + \
        [m.start() for m in MARKER_RE.finditer(said)][:100]
    for j in starts:
        i, redacted = 0, False
        while i < len(prompt):
            if j < len(said) and said[j] == prompt[i]:
                i, j = i + 1, j + 1
                continue
            marker = MARKER_RE.match(said, j)
            if marker is None:
                break
            j, redacted = marker.end(), True
            # where the prompt goes on as the quote does (the quote may go on past the prompt's end)
            resumed = next((k for n in range(12, 2, -1) if said[j:j + n]
                            for k in [prompt.find(said[j:j + n], i + 1)] if k > 0), -1)
            if resumed < 0 and any(c.isspace() for c in prompt[i:].rstrip()):
                break  # the prompt goes on past what could be one secret, and the quote does not
            if resumed > 0 and not _one_secret(prompt[i:resumed]):
                break  # the quote goes on with words the prompt has only further on (a marker of another)
            i = resumed if resumed > 0 else len(prompt)  # (else the secret ends the prompt)
        else:
            if redacted:
                return True
    return False


def _one_secret(span: str) -> bool:
    """Whether ``span`` of a prompt can be what one marker stands for: a token (no space), a private key's
    block, or a short value on one line (a passphrase), not lines of the prompt the quote left out: a cut
    paste ending as the quote after another prompt's secret did counted as quoted with a secret redacted."""
    return (span.startswith("-----BEGIN") or not any(c.isspace() for c in span)
            or ("\n" not in span and len(span) <= 100))


def view_text(jsonl: bytes | str) -> str:
    """The text of ``ctxkit view``'s messages, one after the other: a message's blocks as a typed prompt's
    text has them (:func:`typed_prompts`: text blocks and ``[image]`` for an image, a blank line between),
    so a prompt kept as it was written (a pasted screenshot and a sentence) is found word for word."""
    texts = []
    for line in (jsonl.decode() if isinstance(jsonl, bytes) else jsonl).splitlines():
        content = json.loads(line)["content"]
        texts.append(content if isinstance(content, str) else "\n\n".join(
            b.get("text", "") if b.get("type") == "text" else "[image]" for b in content
            if isinstance(b, dict) and b.get("type") in ("text", "image")))
    return "\n".join(texts)


def check_back(path: Path, work: Path, out: Path, row: dict, timeout: float) -> None:
    """Check 3: expand gives the input back; doctor and the request view accept the session."""
    back = work / "back.jsonl"
    run = ctxkit(["expand", "--store", str(work / "store-no-llm"), *row["skip"], str(out), "-o", str(back)],
                 work, timeout)
    given, restored = path.read_bytes(), back.read_bytes() if back.exists() else b""
    extra = [line for line in restored[len(given):].splitlines() if line.strip()] \
        if restored.startswith(given) else None
    # a Claude Code session keeps the lines ctxkit's compaction appended, as it keeps those of the agent's
    # own /compact (docs/store.md, "What expand gives back"): the input comes back as its first bytes
    row["back"] = run.returncode == 0 and extra is not None and all(map(appended_by_compaction, extra))
    if not row["back"]:
        row["problems"].append(f"expand exit {run.returncode}, not the input byte for byte: {tail(run)}")
    doctor = ctxkit(["doctor", "--json", str(path)], work, timeout)
    row["doctor"] = doctor.returncode
    if doctor.returncode != 0 and not (doctor.returncode == 1 and row.get("refused")):  # (what it refused)
        try:
            findings = [f.get("problem", f.get("message", "")) for f in json.loads(doctor.stdout)["findings"]
                        if f.get("severity") in ("error", "breaks")][:2]
        except (ValueError, KeyError, TypeError):
            findings = [tail(doctor)]
        row["problems"].append(f"doctor exit {doctor.returncode}: {'; '.join(map(str, findings))[:240]}")
    view = ctxkit(["view", "--to", "anthropic-request", *row["skip"], str(path)], work, timeout)
    if view.returncode != 0 or crashed(view):
        row["problems"].append(f"view exit {view.returncode}: {tail(view)}")
        return
    request = json.loads(view.stdout)
    _, unanswered, _ = view_calls(request)
    last = request["messages"][-1] if request.get("messages") else {}
    pending = {b.get("id") for b in last.get("content") or [] if isinstance(b, dict)} \
        if last.get("role") == "assistant" and isinstance(last.get("content"), list) else set()
    # a call in the view's last message is the turn in progress (its result comes with the next request)
    row["pending_calls"] = len(set(unanswered) & pending)
    if set(unanswered) - pending:
        row["problems"].append(f"{len(set(unanswered) - pending)} tool calls unanswered in the request view")


def check(path: Path, timeout: float) -> dict:
    """Every check on one session; ``problems`` lists what failed."""
    row: dict = {"file": str(path), "bytes": path.stat().st_size, "problems": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        read = ctxkit(["stats", "--json", str(path)], work, timeout)
        row["skip"] = []
        if read.returncode == 3 and not crashed(read) and f"{path}:" in read.stderr.decode(errors="replace"):
            # a line ctxkit cannot read (a torn last line, a fragment's orphan result): refused, naming the
            # file and line; the checks go on as a user told to would, with --on-bad-line skip
            row["refused"] = tail(read).replace(str(path), path.name)
            row["skip"] = ["--on-bad-line", "skip"]
        elif read.returncode != 0:
            row["problems"].append(f"stats exit {read.returncode}: {tail(read)}")
        check_simulate(path, work, row, timeout)
        outputs = {policy: check_compact(path, work, policy, row, timeout) for policy in POLICIES}
        if outputs["no-llm"] is not None:
            check_back(path, work, outputs["no-llm"], row, timeout)
    return row


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON object a session instead of the table")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a command may take")
    parser.add_argument("--jobs", type=int, default=1, help="sessions checked at once")
    parser.add_argument("--sample", type=int, help="check this many sessions, drawn at random (seed 27)")
    parser.add_argument("--also", type=Path, nargs="*", default=[],
                        help="with --sample: sessions checked whatever the draw (e.g. all that compacted)")
    args = parser.parse_args()
    missing = [str(p) for p in [*args.paths, *args.also] if not p.exists()]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    sessions = main_sessions(args.paths)
    if args.sample is not None and args.sample < len(sessions):
        sessions = sorted(random.Random(27).sample(sessions, args.sample))
    sessions += [p for p in main_sessions(args.also) if p not in sessions]
    if not args.json:
        print(f"{'session':44} {'req':>4} {'cmp':>3} {'cost':>7} {'reads':>7} {'writes':>7}  "
              f"{'peak none/recorded':>19} {'back':>4} {'prompts':>7}  problems")
    failed = off = refused = 0
    quoted = [0, 0, 0]  # forced no-llm compactions (made) that quote every typed prompt, of those with one;
    # and of the others, those that quote every prompt with its secrets redacted
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = []
        for row in pool.map(lambda p: check(p, args.timeout), sessions):
            rows.append(row)
            failed += bool(row["problems"])
            off += bool(row.get("off")) and "requests" in row
            refused += bool(row.get("refused"))  # (replayed with --on-bad-line skip)
            if row.get("prompts", "0/0").split("/")[1] != "0":
                said, typed = row["prompts"].split("/")
                quoted = [quoted[0] + (said == typed), quoted[1] + 1,
                          quoted[2] + (int(said) + row.get("prompts_redacted", 0) == int(typed) != int(said))]
            if args.json:
                print(json.dumps(row), flush=True)
                continue
            peak = f"{row.get('peak_none', 0):,}/{row.get('peak_recorded', 0):,}"
            print(f"{row['file'][-44:]:44} {row.get('requests', '-'):>4} {row.get('compactions', '-'):>3} "
                  f"{pct(row.get('cost')):>7} {pct(row.get('reads')):>7} {pct(row.get('writes')):>7}"
                  f"{'!' if row.get('off') else ' '} {peak:>19} {str(row.get('back', '-')):>4} "
                  f"{prompts_column(row):>7}  "
                  f"{'; '.join(row['problems']) or ('refused, then read with --on-bad-line skip: ' + row['refused'][-80:] if row.get('refused') else 'ok')}",
                  flush=True)
    ran = sum(1 for r in rows if "requests" in r)
    print(f"{len(sessions)} sessions: {ran - off} of {ran} replayed within 10% of the recorded cost, reads and "
          f"writes ({refused} with a line ctxkit refuses, replayed with --on-bad-line skip); "
          f"{failed} failed a check; {quoted[0]} of {quoted[1]} forced no-llm compactions quote every typed "
          f"prompt, and {quoted[2]} more every one with the secrets in it redacted", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
