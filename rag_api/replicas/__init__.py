"""Several hub processes on one Qdrant deployment (docs/scaling.md): the roles, what they share in
Qdrant (scoped keys, stored responses, each collection's published version) and the writer's
lease."""
