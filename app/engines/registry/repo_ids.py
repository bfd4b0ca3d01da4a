"""Hugging Face repository ids of the models whose tokenizer a shipped entry is, so that ``meta-llama/Llama-3.1-8B-
Instruct`` is ``llama-3.1`` everywhere a name is taken (pickers, URLs, the API, the CLI).

Each id is listed because its model's published tokenizer is the entry's: the sizes and the base and instruct models
of one release share one tokenizer (their model cards say so, and the shipped files are those of the release). An id
is matched without regard to case, as the Hub matches it, and with or without ``https://huggingface.co/`` before it.
A name that looks like a repository id but is not listed is unknown: :func:`closest` then suggests the listed ids
and names it is nearest to. Releases whose tokenizer differs from every shipped one are left out on purpose:
Llama 3.2 and 3.3 (their files are not shipped), Mistral 7B v0.3 (32,768 pieces, not v0.1's 32,000).
"""

from __future__ import annotations

import difflib

HUB = "https://huggingface.co/"


def _sizes(org: str, names: list[str], entry: str) -> dict[str, str]:
    return {f"{org}/{name}": entry for name in names}


REPO_IDS: dict[str, str] = {
    **_sizes("meta-llama", [f"Meta-Llama-3-{s}{k}" for s in ("8B", "70B") for k in ("", "-Instruct")], "llama-3"),
    **_sizes(
        "meta-llama",
        [f"{p}Llama-3.1-{s}{k}" for p in ("", "Meta-") for s in ("8B", "70B", "405B") for k in ("", "-Instruct")],
        "llama-3.1",
    ),
    **_sizes("meta-llama", [f"Llama-2-{s}{k}" for s in ("7b", "13b", "70b") for k in ("", "-hf", "-chat", "-chat-hf")],
             "llama-2"),
    **_sizes("Qwen", [f"Qwen3-{s}{k}" for s in ("0.6B", "1.7B", "4B", "8B", "14B", "32B", "30B-A3B", "235B-A22B")
                      for k in ("", "-Base")], "qwen3"),
    **_sizes("Qwen", [f"Qwen2.5-{s}{k}" for s in ("0.5B", "1.5B", "3B", "7B", "14B", "32B", "72B")
                      for k in ("", "-Instruct")], "qwen2.5"),
    **_sizes("deepseek-ai", ["DeepSeek-V3", "DeepSeek-V3-Base", "DeepSeek-V3-0324"], "deepseek-v3"),
    **_sizes("google", [f"gemma-3-{s}-{k}" for s in ("1b", "4b", "12b", "27b") for k in ("it", "pt")], "gemma-3"),
    **_sizes("google", [f"gemma-2-{s}{k}" for s in ("2b", "9b", "27b") for k in ("", "-it")], "gemma-2"),
    **_sizes("mistralai", ["Mistral-Nemo-Instruct-2407", "Mistral-Nemo-Base-2407"], "mistral-nemo"),
    **_sizes("mistralai", ["Mistral-7B-v0.1", "Mistral-7B-Instruct-v0.1"], "mistral-7b"),
    **_sizes("openai", ["gpt-oss-20b", "gpt-oss-120b"], "o200k_harmony"),
    **_sizes("google-bert", ["bert-base-uncased"], "bert-base-uncased"),
}
_BY_KEY = {repo.lower(): entry for repo, entry in REPO_IDS.items()}
_CASED = {repo.lower(): repo for repo in REPO_IDS}


def key(name: str) -> str:
    """How a repository id is looked up: lower-cased, without the Hub's address before it."""
    name = name.strip()
    if name.lower().startswith(HUB):
        name = name[len(HUB) :]
    return name.strip("/").lower()


def looks_like_repo_id(name: str) -> bool:
    """``owner/name`` (or the Hub's address of one)."""
    parts = key(name).split("/")
    return len(parts) == 2 and all(parts)


def repo_entry(name: str) -> str | None:
    """The entry a listed repository id stands for, or None.

    >>> repo_entry("meta-llama/Llama-3.1-8B-Instruct"), repo_entry("QWEN/qwen3-8b"), repo_entry("x/y")
    ('llama-3.1', 'qwen3', None)
    >>> repo_entry("https://huggingface.co/google/gemma-3-27b-it")
    'gemma-3'
    """
    return _BY_KEY.get(key(name))


def repo_name(name: str) -> str:
    """The listed repository id as the Hub spells it (``qwen/qwen3-8b`` -> ``Qwen/Qwen3-8B``)."""
    return _CASED.get(key(name), name)


def closest(name: str, names: list[str], n: int = 5) -> list[str]:
    """The listed repository ids and ``names`` nearest to ``name`` (a repository id is compared with the ids, and
    its model part with the names), nearest first.

    >>> closest("meta-llama/Llama-3.3-70B-Instruct", ["llama-3", "llama-3.1", "qwen3"])[:2]
    ['meta-llama/Llama-3.1-70B-Instruct', 'meta-llama/Llama-3.1-405B-Instruct']
    """
    wanted = key(name)
    scored: dict[str, float] = {}
    candidates = [(repo, repo.lower()) for repo in REPO_IDS] + [(n_, n_.lower()) for n_ in names]
    model_part = wanted.rsplit("/", 1)[-1]
    for shown, lowered in candidates:
        target = model_part if "/" not in lowered and "/" in wanted else wanted
        ratio = difflib.SequenceMatcher(None, target, lowered).ratio()
        if ratio >= 0.6:
            scored[shown] = max(ratio, scored.get(shown, 0.0))
    return sorted(scored, key=lambda s: (-scored[s], s))[:n]
