"""*1. Primary Request and Intent* opens a long request in 1,000 characters and points to section 6, where it is
quoted. The opening is cut as the summary's other quotes are (docs/summarizer.md): between lines where one ends
in it, else between words, never inside a ``[REDACTED:kind]`` marker, and a code fence it leaves open is closed:
cut inside a pasted function, the rest of the summary read as code (sections 2 to 5, then the function in
section 6 as prose) and the pointer as one more statement of the function."""
from __future__ import annotations

from ctxkit.summarize import ExtractiveSummarizer, SessionFacts
from ctxkit.summarize.prompt import section_heading

POINTER = "[… continued in 6. All user messages]"
HISTORY = [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]


def first_request(prompt: str) -> str:
    """What section 1 quotes of ``prompt``, the session's first request, up to the section's end."""
    summary = ExtractiveSummarizer(facts=SessionFacts(prompts=(prompt, "Thanks"))).summarize(HISTORY)
    body = summary.split(section_heading(1), 1)[1].split(section_heading(2), 1)[0]
    assert prompt in summary.split(section_heading(6), 1)[1]  # section 6 holds the whole of it
    return body.split("The user's first request:\n", 1)[1].split("\n\nMost recent request:", 1)[0]


def test_a_pasted_function_is_opened_in_whole_lines_and_its_fence_closed():
    code = "\n".join(f"    total_{i} = compute(rows[{i}])  # step {i}" for i in range(60))
    prompt = f"Fix this function, it crashes:\n```python\ndef f(rows):\n{code}\n```\nIt should return the sum."
    opened = first_request(prompt)
    head, pointer = opened.rsplit("\n", 1)
    assert pointer == POINTER  # on a line of its own, after the fence, not read as code
    lines = head.split("\n")
    assert lines[-1] == "```" and prompt.startswith("\n".join(lines[:-1]) + "\n")  # whole lines, then the fence
    assert 500 < len(head) <= 1000 + 4


def test_a_one_line_paste_is_opened_at_a_word():
    prompt = " ".join(f"word{i}" for i in range(1000))  # one line, about 7,900 characters
    opened = first_request(prompt)
    head, pointer = opened[:-len(POINTER) - 1], opened[-len(POINTER):]
    assert pointer == POINTER and prompt.startswith(head + " ") and 500 < len(head) <= 1000


def test_a_redaction_marker_is_never_cut_in_half():
    prompt = "x" * 995 + "=[REDACTED:openai-key]" + "y" * 3000  # no space or line end near the cut
    opened = first_request(prompt)
    assert "[REDACTED" not in opened and opened == "x" * 995 + "= " + POINTER


def test_a_paste_cut_in_section_6_closes_its_code_fence():
    """Section 6 cuts a long paste at the prompts' shared limit (10,000 characters here): cut inside a code
    block, the fence is closed before the marker, so sections 7 to 9 read as prose, not as more of the code."""
    code = "\n".join(f"    total_{i} = compute(rows[{i}])  # step {i}" for i in range(400))
    prompt = f"Fix this function:\n```python\ndef f(rows):\n{code}\n```\nIt should return the sum."
    summary = ExtractiveSummarizer(facts=SessionFacts(prompts=(prompt, "Thanks"))).summarize(HISTORY)
    section6 = summary.split(section_heading(6), 1)[1].split(section_heading(7), 1)[0]
    quote = section6.split("- ", 1)[1].split("\n- Thanks", 1)[0]
    head, marker = quote.rsplit("\n", 1)
    assert marker.startswith("[… ") and marker.endswith(" more characters omitted]")
    assert head.endswith("\n```") and prompt.startswith(head[:-4])
    assert sum(line.startswith("```") for line in summary.split("\n")) % 2 == 0  # every fence closed
