"""Fuzz: mutated real transcripts and policies never make ctxkit crash (exit 4), raise or hang.

The cases come from ``tests/fuzz_inputs.py``: windows of the shared corpus's real transcripts
(every Claude Code version there is), a transcript ctxkit compacted itself (its records and
store), and plain Anthropic / OpenAI lists, with one to three fields given the wrong type, keys
deleted, ids duplicated, lines duplicated, a ``blob`` pointed at a file that is not JSON.

* every command, in-process: exit 0-3, a message on stderr when nonzero, no exception;
* reading and projecting alone (cheap, so many more cases): a :class:`TranscriptError` naming the
  line, or a view that writes in every output format;
* policies whose values have the wrong type: ``policy validate`` lists problems, never raises.

In CI (``CI`` set) the examples are derandomized, the same every run. How many: scaled by
``CTXKIT_HYPOTHESIS_EXAMPLES`` (default 150: 900 command cases, 1,800 reading cases, 150
policies, about a minute on a quiet machine). Long runs that also shrink what they find:
``python bench/fuzz.py --cases 10000``.
"""
from __future__ import annotations

import io
import os

import fuzz_inputs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkit.errors import PolicyError, TranscriptError
from ctxkit.transcript import read_transcript
from ctxkit.transcript.writer import write_transcript

SCALE = int(os.environ.get("CTXKIT_HYPOTHESIS_EXAMPLES", "150"))
_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))

pytestmark = pytest.mark.skipif(not fuzz_inputs.corpus_files(), reason="shared corpus not found")


@settings(max_examples=6 * SCALE, **_SETTINGS)
@given(fuzz_inputs.cases())
def test_every_command_handles_mutated_input(case):
    wrong = fuzz_inputs.problem(case)  # raises on a crash (CTXKIT_DEBUG re-raises), Hang on a hang
    assert wrong is None, wrong


@st.composite
def _mutated_transcripts(draw):
    s = fuzz_inputs.seeds()
    name, lines = draw(st.sampled_from(s.transcripts))
    if len(lines) > fuzz_inputs.WINDOW:
        start = 0 if draw(st.booleans()) else draw(st.integers(0, len(lines) - fuzz_inputs.WINDOW))
        lines = lines[start:start + fuzz_inputs.WINDOW]
    return name, draw(fuzz_inputs.mutated_lines(lines, s.not_json))


@settings(max_examples=12 * SCALE, **_SETTINGS)
@given(_mutated_transcripts(), st.sampled_from(["fail", "skip"]))
def test_reading_and_projecting_mutated_lines(transcript, on_bad_line):
    _, lines = transcript
    data = b"\n".join(lines) + b"\n"
    try:
        t = read_transcript("-", stdin=io.BytesIO(data), on_bad_line=on_bad_line)
    except TranscriptError as exc:
        assert exc.line >= 1 and exc.message.startswith("<stdin>:")
        return
    with fuzz_inputs.time_limit(fuzz_inputs.CASE_TIMEOUT):
        t.view().api_messages()
        for to in ("anthropic", "openai"):
            write_transcript(t, io.BytesIO(), to)
        own = io.BytesIO()
        write_transcript(t, own)
    # nothing lost: every input line is written back as it was, bad ones too (blank lines aside)
    assert own.getvalue() == b"".join(x + b"\n" for x in lines if x.strip())


@settings(max_examples=SCALE, **_SETTINGS)
@given(fuzz_inputs.policies())
def test_policy_values_of_the_wrong_type_are_problems(tmp_path_factory, policy):
    from ctxkit import load_policy, validate_policy_file

    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(policy)
    problems = validate_policy_file(path)
    assert all(p.message for p in problems)
    try:
        load_policy(str(path), [])
    except PolicyError as exc:
        assert exc.problems
