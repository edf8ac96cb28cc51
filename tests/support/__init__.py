"""Helpers shared by the tests: protocol-faithful fake upstreams, live-server and migration set-ups."""
