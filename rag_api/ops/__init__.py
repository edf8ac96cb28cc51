"""Operations: the integrity check and its repairs, embedding-model migrations, readiness, the
listening record, run in-process or in the server. May import answering, evaluation and below."""
