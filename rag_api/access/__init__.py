"""Who may do what: the global keys and the scoped keys of the keys file, each request's grant,
and the check every collection lookup makes (docs/security.md). May import the foundation only."""
