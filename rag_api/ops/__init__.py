"""Operations: the integrity check and embedding-model migrations, run in-process or in the server."""
