"""Ways into ctxkit from inside an agent: its hook settings and adapters (each imported only by its user)."""
