"""What the server's process says of itself: whether it is ready, and where it listens (the
record the CLI finds it by)."""
