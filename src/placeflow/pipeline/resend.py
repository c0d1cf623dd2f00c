"""Whether a chunk whose request may have reached the service can be sent again.

A job chunk records `sending_at` before its POST. Found on resume without a batch_id, its
answer was lost: within `idempotency_window` the POST is replayed under the same
Idempotency-Key and body (trusted to get the original job; the answer is judged all the same,
`pipeline.lostpost.judge`). Older than that, the service may have forgotten the key (the spec
does not show its retention), so a replay could create and bill a second job. Then the usage
decides (`pipeline.lostpost.read_usage`): where the key is the run's alone and nothing beyond
the run's ledger is held, the POST never created a job and is sent; otherwise the chunk is
held as uncertain and said so (`--resend-uncertain` sends it anyway, accepting the risk). A
job of the run in flight no longer stops the question: its hold is in the ledger.

Inside a run (issue 44) a lost answer is first replayed at once a few times (`PromptRetry`);
past those tries the usage is asked before every further re-send (`pipeline.submit`), and the
window bounds those re-sends as it bounds a resume's.

The window defaults to 60 s: the spec asks for a prompt retry and shows no retention; a minute
covers the prompt tries, the usage questions between re-sends and a crash and an immediate
resume (a replay then re-attaches, as the kill tests show). A service that forgets keys
sooner is safe all the same: what answers a re-send is judged, and new work after an attempt
that may have created a job is booked and said as billed twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from placeflow.api.client import PlaceApiClient
from placeflow.options import RunOptions
from placeflow.pipeline.lostpost import read_usage
from placeflow.state.records import Chunk
from placeflow.state.runstate import RunState


@dataclass(frozen=True)
class Verdict:
    send: bool
    why: str
    replay: bool = False
    """Sent as a replay of the earlier POST (within the window), not as a new one."""


def post_age(chunk: Chunk, now: datetime) -> float:
    """Seconds since a chunk's POST was written ahead (`sending_at`; 0 when it was not)."""
    sent = chunk.sending_at
    if sent is None:
        return 0.0
    if sent.tzinfo is None:
        sent = sent.replace(tzinfo=now.tzinfo)
    return (now - sent).total_seconds()


def vet(
    api: PlaceApiClient, state: RunState, chunk: Chunk, options: RunOptions, now: datetime
) -> Verdict:
    """Send, replay or hold a chunk that was being sent when the run stopped."""
    if chunk.sending_at is None:
        return Verdict(True, "never sent")
    age = post_age(chunk, now)
    if age <= options.idempotency_window:
        why = f"replayed {age:.0f} s after its POST, under its Idempotency-Key"
        return Verdict(True, why, replay=True)
    if options.resend_uncertain:
        return Verdict(True, "sent again: --resend-uncertain accepts a possible double charge")
    reading = read_usage(api, state, chunk_no=chunk.chunk_no)
    created = reading.created_job(chunk.rows) if reading is not None else None
    if created is False:
        return Verdict(True, "the usage shows its earlier POST created no job; sent")
    reason = (
        "the usage cannot tell (another user of the key, or no figure)"
        if reading is None
        else f"the usage holds {reading.unexplained:,} credit(s) more than the run's ledger"
        " explains"
    )
    return Verdict(
        False,
        f"chunk {chunk.chunk_no}: its POST {age:.0f} s ago got no answer and may have created a"
        f" job the service no longer replays; {reason}. Held as uncertain:"
        " --resend-uncertain sends it again, accepting a possible double charge",
    )
