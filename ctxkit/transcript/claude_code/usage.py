"""Where a Claude Code transcript records what a request used: a main-chain assistant entry's ``message.usage``.

``ctxkit simulate`` puts a simulated request's figures there (:class:`ctxkit.transcript.interface.UsageWriter`):
the usage reader (:mod:`ctxkit.tokens.view_count`) then counts the context the policy sent.
"""
from __future__ import annotations

from ..interface import RequestUsage, UsageWriter

#: the share of a session's answers that read the cache, each after an answer of the same model, whose read is
#: about what the one before reported as ``input_tokens`` (:func:`read_about_input`), from which its API
#: counted the reads in ``input_tokens`` (:func:`reads_counted_in_input`)
READS_IN_INPUT_SHARE = 0.7
#: "about" as such an API reads a prefix: at most a little more than the input before (the prompt grew by the
#: new lines), not below nine tenths of it (it reads in steps of 128 tokens and drops a changed tail)
ABOUT = (0.9, 1.02)


def read_about_input(input_before: int, read: int) -> bool:
    """Whether a request read about what the request before it reported as ``input_tokens`` (:data:`ABOUT`)."""
    return ABOUT[0] * input_before <= read <= ABOUT[1] * input_before


def reads_counted_in_input(about: int, pairs: int) -> bool:
    """Whether the session's API reported ``input_tokens`` as the whole prompt, cache reads included (as
    OpenAI's ``prompt_tokens`` does), not as the Anthropic API does (the plain input only): ``about`` of the
    ``pairs`` of requests (one that read the cache after one to the same model) read about what the one
    before reported as input, the prompt the one before held. On the Anthropic API a request reads the input,
    reads and writes of the one before, and its own input is a few tokens. Seen on real Claude Code sessions
    through relays to DeepSeek (18 of 18, 31 of 31, 72 of 81 such requests, in 128-token steps): taken as
    reported, each prompt counted twice, in ``stats`` (100,312 tokens for a context of 49,000) and in the
    cache replay (+44% to +70% on reads). A relay that caches the tools and system prompt only, and sends
    the messages as plain input (more than it reads), is not one: its requests read the same prefix however
    the input grows."""
    return pairs > 0 and about >= READS_IN_INPUT_SHARE * pairs


def replace_usage(entry: dict, usage: RequestUsage) -> bool:
    """A main-chain answer's ``usage`` reports ``usage``'s input figures (its output and ``cache_creation``
    split kept); a subagent's answer (``isSidechain``) is left as it is: it counted its own context."""
    msg = entry.get("message")
    if entry.get("type") != "assistant" or entry.get("isSidechain") or not isinstance(msg, dict) \
            or not isinstance(msg.get("usage"), dict):
        return False
    msg["usage"] = {**msg["usage"], "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens}
    return True


USAGE_WRITER = UsageWriter(b'"usage"', replace_usage)
