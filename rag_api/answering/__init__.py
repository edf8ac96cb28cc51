"""Answers from retrieved passages: the query (retrieve, then answer), extractive and LLM answers, their streams."""
