"""Ways into ctxkit from inside an agent: Claude Code's hook settings and hooks, and adapters that put a
``ctxkit.ContextManager`` into an agent framework's loop.

One adapter module per framework (``langchain``, ``pydantic_ai``, ``openai_agents``), each installed with
the extra of the same name and imported only by its user: importing this package imports no
framework. Each adapter converts the framework's messages to Anthropic or OpenAI chat dicts, asks
the ContextManager for the messages to send, and converts them back; the policy and its stages
decide everything else.
"""
