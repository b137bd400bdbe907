"""The in-memory door: :class:`ContextManager` keeps the policy's pipeline across an agent's calls.

It imports neither the CLI nor a web or agent framework (the import-linter contracts in pyproject.toml):
the adapters (``ctxkit.integrations``) and the proxy are built on it.
"""
from .manager import ContextManager
from .report import CallReport

__all__ = ["CallReport", "ContextManager"]
