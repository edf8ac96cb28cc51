"""The language models: Ollama and OpenAI-compatible clients, the extractive generator, breakers,
the generation pool, prompts. May import store (its BM25 analyser) and below."""
