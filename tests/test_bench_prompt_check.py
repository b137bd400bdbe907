"""``bench/check_claude_code_files.py``'s ``prompts`` column: a prompt that holds a secret is quoted with
the secret redacted (docs/security.md), and the bench counts it apart from a prompt that was cut. The
count docs/summarizer.md gives rests on this matcher telling the two apart."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from check_claude_code_files import quoted_but_secrets  # noqa: E402


def test_a_prompt_quoted_with_its_secrets_redacted_counts():
    key, other = "sk-" + "a1b2c3d4e5" * 3, "sk-" + "f6e5d4c3b2" * 3
    assert quoted_but_secrets(f"use {key} for the build", "6. All user messages:\n- use [REDACTED:openai-key] for the build\n")
    assert quoted_but_secrets(key, "- hello\n- [REDACTED:openai-key]\n- go on")  # the prompt is the key
    assert quoted_but_secrets(f"a={key} and b={other} done", "a=[REDACTED:openai-key] and b=[REDACTED:openai-key] done")


def test_a_prompt_cut_or_changed_does_not():
    key = "sk-" + "a1b2c3d4e5" * 3
    assert not quoted_but_secrets("hello world", "hello world")  # quoted as it is: not a redaction
    assert not quoted_but_secrets(f"use {key} for the build", "- use [REDACTED:openai-key] for the test")
    # a marker does not stand for the words after a secret
    assert not quoted_but_secrets(f"use {key} for the build", "- use [REDACTED:openai-key]\n- next")
    assert not quoted_but_secrets(f"use {key} for the build and deploy it",
                                  "- use [REDACTED:openai-key] for the build [… 14 more characters omitted]")


def test_a_cut_paste_is_not_counted_by_the_marker_of_another_prompts_secret():
    """A 5,000-character log cut at 2,000 characters, and a later prompt whose secret is redacted and which ends
    as the log does: the marker does not stand for the 3,000 characters the quote left out."""
    log = "".join(f"step {i}: ok\n" for i in range(400)) + "step 400: error at line 3. Please fix."
    said = ("6. All user messages:\n- " + log[:2000] + f" [… {len(log) - 2000:,} more characters omitted]\n"
            "- my token is [REDACTED:github-token]. Please fix.\n")
    assert not quoted_but_secrets(log, said)
    # the same log quoted whole, its one secret redacted, still counts
    secret_log = log.replace("step 7: ok", "step 7: token=ghp_" + "a1B2c3D4e5" * 4)
    assert quoted_but_secrets(secret_log, "- " + log.replace("step 7: ok", "step 7: token=[REDACTED:github-token]"))


def test_a_secret_in_the_first_twenty_characters_still_counts():
    """held-out a9224428: a pasted key page, its key on the third line; the prompt's first 20 characters
    hold the key's start, which the quote does not."""
    key = "AIza" + "SyAC" * 8
    prompt = f"API key\nKey\n{key}\nName\nGemini API Key"
    assert quoted_but_secrets(prompt, "- go on\n- API key\nKey\n[REDACTED:secret-assignment]\nName\nGemini API Key\n")
