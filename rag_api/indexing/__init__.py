"""kb folders to points: which files count, format readers, chunking, ingest (hash-skip, embed,
replace) and sync. May import points and below."""
