"""collections.yaml as a file: edits that keep its comments, and the review of a configuration."""
