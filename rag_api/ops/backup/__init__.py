"""Backups and restores: a consistent copy of collections in one file each, its verification,
retention, and bringing a copy back with an alias swap (docs/operations.md#backups)."""
