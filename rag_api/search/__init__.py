"""Retrieval in one collection: dense, sparse or hybrid search, passages, rerank, diversity,
source evidence. May import points and below."""
