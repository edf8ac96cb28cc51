"""Answers from retrieved passages: the query (resolve, retrieve, answer), its stream and server-sent
events; may import routing, hub, llm, search and what lies below them."""
