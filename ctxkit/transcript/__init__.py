"""Reading, projecting and writing agent transcripts (Claude Code JSONL, Anthropic and OpenAI messages)."""
from . import collapse_view  # noqa: F401  (registers the read-time projection of collapsed runs)
from .formats import FORMATS, OUTPUT_FORMATS
from .model import Transcript
from .reader import read_transcript
from .view import View, ViewMessage, pairing_problems

__all__ = ["FORMATS", "OUTPUT_FORMATS", "Transcript", "View", "ViewMessage", "pairing_problems", "read_transcript"]
