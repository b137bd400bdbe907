"""Built-in policies, shipped in the wheel as package data."""
