"""The lab as one object the web layer holds: run store + worker pool + limits; start, continue and cancel runs."""

from __future__ import annotations

from app.engines.base import check_text
from app.engines.errors import TokenplayError

from .algorithms import check_on_corpus
from .options import LabOptionsError, Options
from .splits import CHECK_SECONDS
from .jobs import Job
from .runs import Run, new_id


class RunNotFound(TokenplayError):
    """No run with that id (never trained here, or expired)."""

    def __init__(self, run_id: str):
        super().__init__(f"no lab run with id {run_id!r}; train one at /lab")


class CorpusTooLarge(TokenplayError):
    """A corpus over the lab's size limit."""


class RunNotReady(TokenplayError):
    """A run whose steps are asked for before it finished."""

    def __init__(self, run: Run):
        super().__init__(f"run {run.id} is {run.status}; steps are available when it is done")


class Lab:
    """Runs in a shared store (a directory or Redis: :mod:`.stores`), trained by a worker pool (processes or
    threads: :mod:`.workers`, :mod:`.jobs`), so several server processes can serve one lab."""

    def __init__(
        self, store, pool, *, max_corpus_chars: int = 2_000_000, max_merges: int = 8_192, quick_wait: float = 0.5,
        pattern_seconds: float = CHECK_SECONDS,
    ):
        self.store = store
        self.pool = pool
        self.max_corpus_chars = max_corpus_chars
        self.max_merges = max_merges
        #: Seconds a user's split regex may take on a corpus outside a request (in one, the request's budget:
        #: ``user_code_seconds``, :mod:`app.engines.budget`).
        self.pattern_seconds = pattern_seconds
        #: Seconds a request that starts a run waits for it to finish before answering with its progress.
        self.quick_wait = quick_wait

    @classmethod
    def from_settings(cls, settings) -> Lab:
        """The lab the settings describe (``make_store`` and ``make_pool`` read them)."""
        from .stores import make_store
        from .workers import make_pool

        store = make_store(settings)
        return cls(
            store,
            make_pool(store, settings),
            max_corpus_chars=settings.lab_max_corpus_chars,
            max_merges=settings.lab_max_merges,
            quick_wait=settings.lab_quick_wait_seconds,
        )

    def check_corpus(self, corpus: str) -> None:
        """Refuse a corpus over the size limit, an empty one, or one with a lone surrogate before queueing it."""
        if len(corpus) > self.max_corpus_chars:
            raise CorpusTooLarge(
                f"the corpus is {len(corpus):,} characters; the lab trains on at most {self.max_corpus_chars:,}"
            )
        if not corpus.strip():
            raise LabOptionsError("the corpus is empty: paste some text or pick an example")
        check_text(corpus)

    def start(self, corpus: str, options: Options, *, wait: float = 0.0) -> Run:
        """Queue a training run and return it (already done if it finished within ``wait`` seconds)."""
        self.check_corpus(corpus)
        options.check(self.max_merges)
        check_on_corpus(corpus, options, self.max_merges, self.pattern_seconds)  # a slow pattern: 422, not a failed run
        run = Run(new_id(), corpus, options)
        self.pool.submit(Job(run, self.max_merges))
        if wait > 0:
            self.pool.wait(run.id, wait)
        return run

    def continue_with(self, parent: Run, k: int, pair: tuple[int, int], *, wait: float = 0.0) -> Run:
        """A new run: ``parent``'s first ``k`` merges, then ``pair`` forced as merge ``k + 1``, then automatic."""
        if not 0 <= k <= parent.n_steps:
            raise LabOptionsError(f"step {k} is out of range: this run has steps 0..{parent.n_steps}")
        target = max(parent.target_merges, k + 1)
        # a typed merge list's merges are the kept steps; from the forced pair on the run trains by itself
        options = Options.from_dict(parent.options.to_dict() | {"merges": target, "vocab_size": None, "merge_list": None})
        run = Run(new_id(), parent.corpus, options, parent=parent.id)
        job = Job(
            run,
            max(self.max_merges, target),
            prefix=parent.steps[:k],
            prefix_n_ties=parent.n_ties[:k],
            force=pair,
        )
        self.pool.submit(job)
        if wait > 0:
            self.pool.wait(run.id, wait)
        return run

    def get(self, run_id: str) -> Run | None:
        return self.store.get(run_id)

    def run(self, run_id: str) -> Run:
        """The run with this id, or :class:`RunNotFound`."""
        run = self.store.get(run_id)
        if run is None:
            raise RunNotFound(run_id)
        return run

    def cancel(self, run_id: str) -> bool:
        return self.pool.cancel(run_id)

    def shutdown(self) -> None:
        self.pool.shutdown()
