"""The chunks of a run that could not settle (or be sent) now, and why (`Held`)."""

from __future__ import annotations

import threading


class Held:
    """The chunks of a run that could not settle (or be sent) now, and why: written by the
    run's thread (settling) and the sender's (a chunk vetted as uncertain), so every access
    takes its lock. An *uncertain* one's request may have been charged without its answer: a
    resume sends it again only where the key's usage shows it was not billed, and
    `--resend-uncertain` is what settles it; the others a plain resume retries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._why: dict[int, tuple[str, bool]] = {}

    def hold(self, chunk_no: int, why: str, *, uncertain: bool = False) -> None:
        with self._lock:
            self._why[chunk_no] = (why, uncertain)

    def release(self, chunk_no: int) -> None:
        with self._lock:
            self._why.pop(chunk_no, None)

    def message(self, run_id: str) -> str | None:
        """What the run says when it stops with chunks held (None: none held), naming the
        command that settles each kind."""
        with self._lock:
            held = sorted(self._why.items())
        said = []
        retried = [why for _, (why, uncertain) in held if not uncertain]
        if retried:
            said.append(
                f"{len(retried)} chunk(s) held: {'; '.join(retried)}. `placeflow resume"
                f" {run_id}` retries them"
            )
        lost = [why for _, (why, uncertain) in held if uncertain]
        if lost:
            said.append(
                f"{len(lost)} chunk(s) held as uncertain: {'; '.join(lost)}. Their requests may"
                " have been billed without an answer, which no plain resume buys again (it"
                " sends only those the key's usage shows were not billed):"
                f" `placeflow resume {run_id} --resend-uncertain` sends them again, paying"
                " again what they cost (counted in possible_extra_credits)"
            )
        return ". ".join(said) or None
