"""The command line: thin typer commands over the library, and the one place errors become exit codes."""
