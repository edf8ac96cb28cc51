"""Migrations: a collection moved to another embedding model, built beside the live one,
verified and swapped in by alias (docs/operations.md)."""
