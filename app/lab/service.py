"""The lab as one object the web layer holds: store + worker pool + limits; start, continue and cancel runs."""

from __future__ import annotations

from pathlib import Path

from app.engines.base import check_text

from .algorithms import LabOptionsError, Options
from .jobs import Job, JobPool
from .runs import Run, RunStore, new_id


class Lab:
    def __init__(
        self,
        runs_dir: Path,
        *,
        max_runs: int = 64,
        workers: int = 2,
        queue: int = 8,
        max_corpus_chars: int = 2_000_000,
        max_merges: int = 8_192,
    ):
        self.store = RunStore(runs_dir, max_runs)
        self.pool = JobPool(self.store, workers, queue)
        self.max_corpus_chars = max_corpus_chars
        self.max_merges = max_merges

    @classmethod
    def from_settings(cls, settings) -> Lab:
        """The lab the settings describe: the shared run store (directory or Redis, :mod:`.stores`) and the
        worker pool (processes by default, :mod:`.workers`), so several server processes can serve one lab."""
        from .stores import make_store
        from .workers import make_pool

        lab = cls.__new__(cls)
        lab.store = make_store(settings)
        lab.pool = make_pool(lab.store, settings)
        lab.max_corpus_chars = settings.lab_max_corpus_chars
        lab.max_merges = settings.lab_max_merges
        return lab

    def check_corpus(self, corpus: str) -> None:
        """Refuse an empty corpus or one with a lone surrogate before queueing it (size limits are checked at the
        HTTP boundary)."""
        if not corpus.strip():
            raise LabOptionsError("the corpus is empty: paste some text or pick an example")
        check_text(corpus)

    def start(self, corpus: str, options: Options, *, wait: float = 0.0) -> Run:
        """Queue a training run and return it (already done if it finished within ``wait`` seconds)."""
        self.check_corpus(corpus)
        options.check(self.max_merges)
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
        options = Options.from_dict(parent.options.to_dict() | {"merges": target, "vocab_size": None})
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

    def cancel(self, run_id: str) -> bool:
        return self.pool.cancel(run_id)

    def shutdown(self) -> None:
        self.pool.shutdown()
