"""What the replays of sentencepiece's runs share (SentencePiece BPE: :mod:`.spm_replay`, unigram:
:mod:`.unigram_replay`): each step is a ``.model`` of its own, which cuts the corpus window and counts the whole
corpus exactly as ``sentencepiece`` would with it (normalization included). Models, windows and counts are made
when first asked for and a few are kept, as each view of a step asks again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from app.engines.base import Tokenizer
from app.engines.result import TokenizeResult


def remember(lock: threading.Lock, cache: OrderedDict, key: Any, make: Callable[[], Any], keep: int) -> Any:
    """``cache[key]``, made by ``make()`` when missing; at most ``keep`` entries stay, the least recently used go."""
    with lock:
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
    found = make()
    with lock:
        cache[key] = found
        while len(cache) > keep:
            cache.popitem(last=False)
    return found


class ModelSteps:
    """A replay whose step ``k`` is the model :meth:`make_model` builds (mixed into a
    :class:`~.display.ReplayView`, which brings ``run``, ``window`` and ``_lock``)."""

    MODELS_KEPT = 8
    WINDOWS_KEPT = 32

    def make_model(self, k: int) -> Tokenizer:
        raise NotImplementedError

    def _caches(self) -> dict[str, OrderedDict]:
        caches = self.__dict__.get("_step_caches")
        if caches is None:
            caches = self.__dict__.setdefault("_step_caches", {"models": OrderedDict(), "windows": OrderedDict(),
                                                               "counts": OrderedDict()})
        return caches

    def model(self, k: int) -> Tokenizer:
        return remember(self._lock, self._caches()["models"], k, lambda: self.make_model(k), self.MODELS_KEPT)

    def corpus_at(self, k: int) -> TokenizeResult:
        """The corpus window as step ``k``'s model cuts it, each token placed in the window's text."""
        return remember(self._lock, self._caches()["windows"], k, lambda: self.model(k).tokenize(self.window),
                        self.WINDOWS_KEPT)

    def text_tokens(self, k: int) -> int:
        """The tokens of the whole corpus as step ``k``'s model cuts it: after the last step, what ``/api/tokenize``
        counts with the run's tokenizer."""
        return remember(self._lock, self._caches()["counts"], k, lambda: len(self.model(k).encode(self.run.corpus)),
                        1 << 20)
