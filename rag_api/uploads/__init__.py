"""Files in over HTTP: uploads copied into a collection's kb folder and indexed in a bounded, durable
queue by the watcher's own sync (docs/console-and-uploads.md). May import hub and below."""
