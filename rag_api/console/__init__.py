"""The console: server-rendered pages at `/` over the hub's own HTTP API, holding no collection
data (docs/console-and-uploads.md). Imports nothing of ours."""
