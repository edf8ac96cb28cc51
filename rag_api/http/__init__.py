"""The HTTP surface: the app, its routes, auth, limits, JSON bodies, the error shape and the request log."""
