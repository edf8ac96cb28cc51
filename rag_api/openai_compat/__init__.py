"""The OpenAI-compatible surface's logic: request bodies, models (= collections), conversations,
replies, chat completions and responses; may import answering and everything below it."""
