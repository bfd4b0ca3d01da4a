"""A class following the teacher through a finished lab run, without the web.

- :mod:`.service` — :class:`~app.classroom.service.Classroom`, what the pages and the session API call: start a
  session, check codes and teacher tokens, move the class, count followers and votes, reveal;
- :mod:`.sessions` — a session, its join code and teacher token, and the errors;
- :mod:`.quiz` — quiz mode's choices (the pairs that could merge next), the tally and the reveal;
- :mod:`.stores` — where sessions, their event logs, votes and followers' heartbeats are kept (a directory or
  Redis);
- :mod:`.hub` — the teacher's events fanned out, in one worker process, to every follower's stream it serves.
"""
