"""What is computed *about* a transcript, never changing it.

Owns the ``stats`` of a view, the Anthropic request body a policy would send
(``request``), the tool definitions ctxkit offers a model
(``tool_definitions``), and whether a compaction run did its job
(``outcome``).

May import the pipeline and the stages (to simulate a run); must not import
the CLI, typer or rich.
"""
