"""Plain message lists: one Anthropic Messages API or OpenAI chat message per line."""
