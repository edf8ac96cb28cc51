"""One knowledge base's points: the Collection gateway, write batches, document generations, chunk
numbers, locks. May import embedding, store and below."""
