"""The ``collapse`` stage and what only it uses.

``stage`` is the stage (its docstring is the user documentation); ``rules``
tells read/search calls from the rest and writes the rule-based summaries.

Must not import: the CLI, typer or rich; other stages.
"""
