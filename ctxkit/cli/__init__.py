"""The command line: typer commands over the library, one module per command group.

Each command parses its options, calls one library function and renders the
result (rich, on stderr; data only on stdout). ``app`` holds the one error
boundary that maps ctxkit's errors to exit codes, and the option definitions
the commands share; ``run_setup`` builds a run (policy, transcript, store,
Context) from the options. Nothing in the library imports this package.
"""
