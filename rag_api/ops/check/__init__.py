"""The integrity check: every collection against its config and folder, its findings and the
repairs that are safe (`rag-hub check`, the nightly timer)."""
