"""What the hub tells about itself: Prometheus metrics, log formats, the request context of log
lines. May import the foundation only."""
