"""Jobs: work that outlives the request that started it (an upload's indexing, a backup, a check,
a migration), one record shape for every kind, one way to run it, held by the hub (`hub.jobs`).
May import the foundation only."""
