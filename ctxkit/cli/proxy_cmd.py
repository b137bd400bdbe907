"""``ctxkit proxy``: serve the policies on the wire (docs/proxy.md); the server is :mod:`ctxkit.proxy`."""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from ..errors import UsageError
from ..quoting import quote
from .app import PolicyOpt, SetOpt, WindowOpt, app, handle_errors, stderr_console
from .conventions import choices_metavar

ProxyReport = Literal["text", "json"]


def request_line(r: Any) -> str:
    """One request as the log shows it: conversation, tokens in → sent, cache read/write, saved."""
    who = r.conversation or "-"
    parts = [f"{who:<12} {r.method} {r.path} {r.status}"]
    if r.tokens_in is not None:
        parts.append(f"{r.tokens_in:,} → {r.tokens_sent:,} tokens")
    if r.usage:
        parts.append(f"cache read {r.usage.get('cache_read_input_tokens', 0):,} "
                     f"write {r.usage.get('cache_creation_input_tokens', 0):,}")
    if r.managed:
        parts.append(f"saved ${r.saved_usd:.4f}")
    elif r.would_save_usd is not None:
        parts.append(f"dry run: would send {r.would_send:,} and save ${r.would_save_usd:.4f}")
    if r.warning:
        parts.append(f"warning: {r.warning}")
    if r.error:
        parts.append(r.error)
    return "  ".join(parts)


@app.command("proxy")
@handle_errors
def proxy(
    upstream: Annotated[str, typer.Option("--upstream", metavar="URL", help="Where requests go on to, e.g. "
                                          "https://api.anthropic.com or https://api.openai.com.")],
    listen: Annotated[str, typer.Option("--listen", metavar="HOST:PORT", help="Where to listen (a port alone: "
                                        "127.0.0.1; port 0 picks a free one). Another host than loopback lets "
                                        "anyone who reaches it use the keys its clients send.")] = "127.0.0.1:8787",
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    store: Annotated[Optional[Path], typer.Option("--store", metavar="DIR", help="Store folder: each "
                                                  "conversation's decisions and what its requests were spared, "
                                                  "under DIR/proxy/CONVERSATION (default: .ctxkit/ here).")] = None,
    context_window: WindowOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Forward every request as it came, and log what the "
                                          "policy would have sent and saved.")] = False,
    report: Annotated[ProxyReport, typer.Option("--report", metavar=choices_metavar(ProxyReport),
                                                help="A line per request on stderr, or one JSON object per "
                                                "request on stdout.")] = "text",
) -> None:
    """Serve the Anthropic Messages and OpenAI Chat Completions APIs, managing each conversation's context.

    Example: ctxkit proxy --upstream https://api.anthropic.com, then ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude
    """
    try:  # the server stack is the ``proxy`` extra
        from ..proxy.app import ProxySettings
        from ..proxy.server import bind, parse_listen, serve
    except ImportError as exc:
        raise UsageError(f"ctxkit proxy needs {exc.name or 'its server packages'}, which is not installed: "
                         "pip install 'ctxkit[proxy]'") from None
    from ..proxy.conversations import live_managers
    from .run_setup import guard_policy, make_policy

    if not upstream.startswith(("http://", "https://")) or "//" not in upstream or not upstream.split("//", 1)[1]:
        raise UsageError(f"--upstream must be an http:// or https:// URL, got {quote(upstream)}")
    try:
        host, port = parse_listen(listen)
    except ValueError:
        raise UsageError(f"--listen must look like HOST:PORT or PORT, got {quote(listen)}") from None
    store_dir = store or Path(".ctxkit")
    if store_dir.exists() and not store_dir.is_dir():  # else every request would go unmanaged, each with a warning
        raise UsageError(f"--store {store_dir}: not a folder (each conversation's store is a folder in it)")
    loaded = make_policy(policy, set_, context_window)
    guard_policy(loaded, summarizes=True)
    console = stderr_console()
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    where = sock.getsockname()
    shown = f"[{where[0]}]" if ":" in where[0] else where[0]

    def on_request(record: Any) -> None:
        if report == "json":
            sys.stdout.write(json.dumps(record.as_dict(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            console.print(request_line(record), markup=False)

    def started() -> None:
        console.print(f"ctxkit proxy: listening on http://{shown}:{where[1]}, forwarding to {upstream}"
                      f"{' (dry run)' if dry_run else ''}; store {store_dir}", markup=False)
        if host not in ("127.0.0.1", "::1", "localhost"):
            console.print(f"ctxkit proxy: warning: listening on {host}, not loopback: anyone who reaches it "
                          "can use the keys its clients send", markup=False)

    settings = ProxySettings(upstream, live_managers(loaded, context_window), store=store_dir, dry_run=dry_run,
                             on_request=on_request)
    # SIGTERM or Ctrl-C: uvicorn finishes the requests in flight, then raises the signal again, here: a
    # server stopped when asked has done its job (exit 0)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))
    serve(settings, sock, on_started=started)
