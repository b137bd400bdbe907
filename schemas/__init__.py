"""JSON Schemas, shipped in the wheel as package data."""
