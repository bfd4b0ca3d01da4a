"""The trainer options of ``sentencepiece``, with its names and its defaults, checked before any training starts.

:class:`TrainerOptions` holds the options our SentencePiece trainers (BPE: :mod:`.bpe_trainer`, unigram:
:mod:`.unigram_trainer`) take, each named and defaulted as ``sentencepiece.SentencePieceTrainer.train`` names and
defaults it. :meth:`TrainerOptions.from_dict` reads them from JSON-like data and refuses an unknown option, a value
of the wrong type or out of range with :class:`TrainerOptionsError`, whose ``field`` names the option. ``vocab_size``
is not among them: it is the run's size, given beside them.

It does not read a corpus or train; the limits that depend on the corpus (a ``vocab_size`` the corpus cannot reach)
are the trainers' to check.

>>> TrainerOptions.from_dict({"byte_fallback": True}).byte_fallback
True
>>> TrainerOptions.from_dict({"character_coverage": 1.5})
Traceback (most recent call last):
...
app.engines.sentencepiece.trainer_options.TrainerOptionsError: sentencepiece.character_coverage must be in (0, 1] (1.0 keeps every character), got 1.5
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..training import TrainingError

NORMALIZATION_RULES = ("nmt_nfkc", "identity", "nfkc", "nmt_nfkc_cf", "nfkc_cf")
UNK_PIECE, BOS_PIECE, EOS_PIECE, PAD_PIECE = "<unk>", "<s>", "</s>", "<pad>"


class TrainerOptionsError(TrainingError):
    """An option sentencepiece's trainer would refuse, or one we do not know; ``field`` names it."""

    def __init__(self, field_name: str, message: str):
        self.field = field_name
        super().__init__(message)

    def __reduce__(self):  # a worker process sends it back whole
        return self.__class__, (self.field, str(self))


@dataclass(frozen=True)
class TrainerOptions:
    """sentencepiece's trainer options (names and defaults as ``SentencePieceTrainer.train`` has them)."""

    character_coverage: float = 0.9995
    byte_fallback: bool = False
    split_digits: bool = False
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    normalization_rule_name: str = "nmt_nfkc"
    max_sentencepiece_length: int = 16
    split_by_unicode_script: bool = True
    split_by_number: bool = True
    split_by_whitespace: bool = True
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    user_defined_symbols: tuple[str, ...] = field(default_factory=tuple)
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    max_sentence_length: int = 4192
    # unigram only
    shrinking_factor: float = 0.75
    num_sub_iterations: int = 2

    # -- reading ------------------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, prefix: str = "sentencepiece.") -> TrainerOptions:
        """Options from JSON-like data (missing ones keep their defaults); raise :class:`TrainerOptionsError`
        naming the first option that is unknown, of the wrong type or out of range."""
        if data is None:
            data = {}
        if isinstance(data, TrainerOptions):
            return data
        if not isinstance(data, dict):
            raise TrainerOptionsError(prefix.rstrip("."), f"{prefix.rstrip('.')} must be an object of sentencepiece "
                                      f"trainer options, got {type(data).__name__}")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name not in known:
                raise TrainerOptionsError(
                    prefix + str(name),
                    f"unknown option {prefix}{name}; the options are: {', '.join(known)}",
                )
            default = getattr(cls(), name)
            values[name] = _typed(prefix + name, value, default)
        options = cls(**values)
        options.check(prefix)
        return options

    def check(self, prefix: str = "sentencepiece.") -> None:
        """Refuse values sentencepiece's trainer refuses (its ranges, its rules for the special ids)."""
        if not 0.0 < self.character_coverage <= 1.0:
            raise TrainerOptionsError(
                prefix + "character_coverage",
                f"{prefix}character_coverage must be in (0, 1] (1.0 keeps every character), "
                f"got {self.character_coverage}",
            )
        if self.normalization_rule_name not in NORMALIZATION_RULES:
            raise TrainerOptionsError(
                prefix + "normalization_rule_name",
                f"{prefix}normalization_rule_name must be one of {', '.join(NORMALIZATION_RULES)}, "
                f"got {self.normalization_rule_name!r}",
            )
        if not 1 <= self.max_sentencepiece_length <= 512:
            raise TrainerOptionsError(prefix + "max_sentencepiece_length",
                                      f"{prefix}max_sentencepiece_length must be from 1 to 512, "
                                      f"got {self.max_sentencepiece_length}")
        if not 10 <= self.max_sentence_length <= 1 << 30:
            raise TrainerOptionsError(prefix + "max_sentence_length",
                                      f"{prefix}max_sentence_length (bytes) must be from 10 to 1073741824, "
                                      f"got {self.max_sentence_length}")
        if not 0.5 <= self.shrinking_factor <= 0.95:
            raise TrainerOptionsError(prefix + "shrinking_factor",
                                      f"{prefix}shrinking_factor must be from 0.5 to 0.95, got {self.shrinking_factor}")
        if not 1 <= self.num_sub_iterations <= 10:
            raise TrainerOptionsError(prefix + "num_sub_iterations",
                                      f"{prefix}num_sub_iterations must be from 1 to 10, got {self.num_sub_iterations}")
        if self.unk_id < 0:
            raise TrainerOptionsError(prefix + "unk_id", f"{prefix}unk_id must be 0 or more: every model trained here "
                                      f"has an unknown piece {UNK_PIECE}, got {self.unk_id}")
        seen: dict[int, str] = {}
        for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
            value = getattr(self, name)
            if value < -1:
                raise TrainerOptionsError(prefix + name, f"{prefix}{name} must be -1 (none) or an id, got {value}")
            if value >= 0 and value in seen:
                raise TrainerOptionsError(prefix + name, f"{prefix}{name} {value} is already {prefix}{seen[value]}; "
                                          "give each special piece its own id (or -1 for none)")
            if value >= 0:
                seen[value] = name
        symbols: set[str] = set()
        specials = {UNK_PIECE, BOS_PIECE, EOS_PIECE, PAD_PIECE}
        for s in self.user_defined_symbols:
            if not s:
                raise TrainerOptionsError(prefix + "user_defined_symbols",
                                          f"{prefix}user_defined_symbols holds an empty string; remove it")
            if s == UNK_PIECE:
                raise TrainerOptionsError(prefix + "user_defined_symbols",
                                          f"{prefix}user_defined_symbols must not hold {UNK_PIECE}, the unknown piece")
            if s in symbols:
                raise TrainerOptionsError(prefix + "user_defined_symbols",
                                          f"{prefix}user_defined_symbols: {s!r} is defined twice; list each once")
            if self.byte_fallback and len(s) == 6 and s.startswith("<0x") and s.endswith(">"):
                raise TrainerOptionsError(prefix + "user_defined_symbols",
                                          f"{prefix}user_defined_symbols: {s!r} is a byte piece, which byte_fallback "
                                          "already defines; remove it")
            if s in specials:
                continue  # sentencepiece makes the special piece user-defined (or refuses <unk>, above)
            symbols.add(s)

    # -- facts --------------------------------------------------------------------------------------------------
    def meta_ids(self, vocab_size: int) -> dict[int, tuple[str, str]]:
        """The meta pieces by id (``(piece, kind)``, kind ``unknown``/``control``/``user_defined``/``byte``), as
        sentencepiece's trainer places them: the special pieces at their ids, then user-defined symbols and the
        256 byte pieces (byte fallback) at the lowest free ids. Raises :class:`TrainerOptionsError` for an id at or
        beyond ``vocab_size``."""
        meta: dict[int, tuple[str, str]] = {}
        for name, piece in (("unk_id", UNK_PIECE), ("bos_id", BOS_PIECE), ("eos_id", EOS_PIECE), ("pad_id", PAD_PIECE)):
            i = getattr(self, name)
            if i < 0:
                continue
            if i >= vocab_size:
                raise TrainerOptionsError(f"sentencepiece.{name}",
                                          f"sentencepiece.{name} {i} is not below vocab_size {vocab_size}; "
                                          "choose a smaller id or a larger vocab_size")
            meta[i] = (piece, "unknown" if piece == UNK_PIECE else "control")
        special_ids = {BOS_PIECE: self.bos_id, EOS_PIECE: self.eos_id, PAD_PIECE: self.pad_id}
        extra = [(s, "user_defined") for s in self.user_defined_symbols]
        if self.byte_fallback:
            extra += [(f"<0x{b:02X}>", "byte") for b in range(256)]
        next_id = 0
        for piece, kind in extra:
            if special_ids.get(piece, -1) >= 0:
                meta[special_ids[piece]] = (piece, kind)
                continue
            while next_id in meta:
                next_id += 1
            meta[next_id] = (piece, kind)
        return meta

    def to_dict(self) -> dict:
        d = asdict(self)
        d["user_defined_symbols"] = list(self.user_defined_symbols)
        return d


def _typed(name: str, value: Any, default: Any) -> Any:
    """``value`` as the type of ``default``, or :class:`TrainerOptionsError` saying which type it must be."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TrainerOptionsError(name, f"{name} must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TrainerOptionsError(name, f"{name} must be an integer, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise TrainerOptionsError(name, f"{name} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise TrainerOptionsError(name, f"{name} must be a string, got {value!r}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
            raise TrainerOptionsError(name, f"{name} must be a list of strings, got {value!r}")
        return tuple(value)
    raise TrainerOptionsError(name, f"{name}: unsupported value {value!r}")  # pragma: no cover
