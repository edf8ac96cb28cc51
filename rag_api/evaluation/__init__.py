"""`rag-hub eval`: how well a collection retrieves on its user's own questions, and which retrieval
settings (those that need no re-index) would do better (docs/eval.md). May import hub and below."""
