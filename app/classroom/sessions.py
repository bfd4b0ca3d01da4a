"""A class following the teacher: a live session over one finished lab run, without the web.

The teacher shares a run; the session gets a short join code (:func:`new_code`) and a teacher token that only the
teacher's page holds (the store keeps its SHA-256, compared in constant time). Each thing the teacher does (set a
step, turn quiz mode on or off, end the session) is an *event* appended to the session's log in order, numbered
``seq`` 1, 2, 3...; the last event is the session's state. Followers' streams read that log (:mod:`.hub` wakes
them), so every follower sees every event in order, whichever worker process or machine serves it.

- **quiz mode**: at step k each student predicts merge k+1 by choosing one of the candidate pairs (the pairs the
  pair table would list before that merge: :mod:`.quiz`); one vote per follower per step, the first one counts.
  Stepping on to k+1 is the reveal: the vote of step k is then right when it names merge k+1's pair. A vote counts
  only from a follower who **joined**: the follow page and its event stream give each browser its id
  (``tp_follower``) and record it as the session's; a vote with any other id is refused. Votes are also limited per
  client address (``votes_per_address`` within ``vote_window``): one machine cannot stuff the ballot by asking for
  many ids;
- **followers**: a follower is a browser (its ``tp_follower`` id) with at least one open event stream whose
  heartbeat is younger than ``follower_ttl``; several tabs of one browser count once, a stream closed cleanly
  stops counting at once, one whose worker died stops counting when its heartbeat is too old;
- **joining**: a client (its address) that has tried ``join_failures`` codes that do not exist within
  ``join_window`` seconds is refused every code for a while (:class:`TooManyJoins`, 429 with ``Retry-After``),
  so a 6-character code from a 31-letter alphabet (887 million codes) cannot be found by guessing; a request
  with the right teacher token is never refused;
- **expiry**: a session ends ``ttl`` seconds after the teacher's last action.

Time comes from ``clock`` (``time.time`` by default), so tests drive expiry and heartbeats themselves. Where
sessions are kept is :mod:`.stores` (a directory shared by the worker processes of one machine, or Redis);
:class:`app.classroom.service.Classroom` puts the rules, a store and the streams together.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata
from dataclasses import asdict, dataclass

from app.engines.errors import TokenplayError


#: Join codes: no 0/O, 1/I/L, so a code read off a projector is typed right.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
_FOLLOWER_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


class SessionError(TokenplayError):
    """Base class of the class sessions' errors."""


class SessionNotFound(SessionError):
    def __init__(self, code: str):
        super().__init__(f"no class session with code {code!r}: check the code on the teacher's screen (sessions end a while after the teacher's last step)")


class TooManyJoins(SessionError):
    """A client that tried too many codes that do not exist; it may try again after ``retry_after`` seconds."""

    def __init__(self, retry_after: float):
        self.retry_after = max(1, int(retry_after + 0.999))
        super().__init__(f"too many wrong session codes from this address; try again in {self.retry_after} seconds")


class NotAuthenticated(SessionError):
    """A teacher's action without ``Authorization: Bearer <teacher token>`` (401)."""

    def __init__(self):
        super().__init__("only the teacher moves the class: send the teacher token as 'Authorization: Bearer <token>'")


class NotTeacher(SessionError):
    """A teacher's action with a token that is not this session's (403)."""

    def __init__(self):
        super().__init__("this token is not the teacher token of this session")


class VoteRefused(SessionError):
    """A vote that cannot count now (quiz mode off, the class moved on, already voted): 409."""


class NotJoined(SessionError):
    """A vote or a nickname from a follower id this session never gave out (403): they count only from a student
    who joined, by opening the class's follow page or its event stream."""

    def __init__(self, code: str, what: str = "a vote counts"):
        super().__init__(f"this browser has not joined class {code}: open the class's page (/follow/{code}) first; "
                         f"{what} only from a student who follows the class")


class TooManyVotes(SessionError):
    """An address that cast too many votes lately (429); it may vote again after ``retry_after`` seconds."""

    def __init__(self, retry_after: float):
        self.retry_after = max(1, int(retry_after + 0.999))
        super().__init__(f"too many votes from this address; try again in {self.retry_after} seconds")


class SessionEnded(VoteRefused):
    def __init__(self):
        super().__init__("the teacher has ended this session")


#: A student's nickname: optional, 1 to this many characters (shown as text, never as markup).
NICKNAME_MAX = 24


def nickname(text: str | None) -> str | None:
    """A nickname as typed, as it is kept: spaces at the ends dropped and runs of them made one; None for an empty
    one (no nickname). :class:`SessionError` (422) for one longer than :data:`NICKNAME_MAX` characters or with
    control characters.

    >>> nickname("  Ada   L. "), nickname("   "), nickname(None)
    ('Ada L.', None, None)
    """
    name = " ".join((text or "").split())
    if not name:
        return None
    if len(name) > NICKNAME_MAX:
        raise SessionError(f"a nickname has at most {NICKNAME_MAX} characters; this one has {len(name)}")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs") and c != "\u200d" for c in name):  # ZWJ: emoji
        raise SessionError("a nickname cannot hold control or invisible characters; type letters, digits, marks")
    return name


def new_code() -> str:
    """A random join code: :data:`CODE_LENGTH` characters of :data:`ALPHABET`."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(text: str) -> str:
    """A code as typed, the way it is stored: capitals, without spaces or dashes.

    >>> normalize_code(" k7p-x2m ")
    'K7PX2M'
    """
    return re.sub(r"[\s-]+", "", text).upper()


def valid_code(code: str) -> bool:
    """
    >>> valid_code("K7PX2M"), valid_code("K7PX2"), valid_code("K7PX2O")
    (True, False, False)
    """
    return len(code) == CODE_LENGTH and all(c in ALPHABET for c in code)


def valid_follower(follower: str | None) -> bool:
    return bool(follower) and _FOLLOWER_ID.fullmatch(follower) is not None


def new_follower() -> str:
    return secrets.token_urlsafe(16)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None.

    >>> bearer_token("Bearer abc"), bearer_token("bearer  abc "), bearer_token("Basic abc"), bearer_token(None)
    ('abc', 'abc', None, None)
    """
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


@dataclass
class Session:
    """What a session is: its code, its run, the teacher token's hash and when it ends (``expires``).

    The state that changes (step, quiz mode, ended) is the last event of its log, not kept here."""

    code: str
    run_id: str
    token_hash: str
    steps: int
    quiz_possible: bool
    created: float
    expires: float

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Session:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})

    def is_teacher(self, token: str | None) -> bool:
        """Whether ``token`` is this session's teacher token (constant-time comparison of the hashes)."""
        return token is not None and hmac.compare_digest(token_hash(token), self.token_hash)
