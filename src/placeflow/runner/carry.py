"""Carrying out a recorded run's chunks: submit ─▶ poll ─▶ fetch ─▶ load, then account.

`carry_out` takes every chunk not yet loaded from where its row in `jobs` says it is
(`placeflow.state.lifecycle`), in this order:

    1. ended, not loaded (a crash): loaded from the file on disk, else fetched again
    2. synchronous batches: sent one at a time, each loaded as it comes back
    3. held chunks (unknown job, no result file) sent again when --resend-uncertain says so
    4. job chunks: a `Sender` thread submits them while this thread polls and fetches each job
       as it ends, and loads the files in batches (`placeflow.runner.batch`)
    5. places left to other runs (claimed) waited for, up to --claim-wait, while their
       owners are alive and running
    6. account, however the run ended

Two threads work on one run: this one and the sender's. What they share is named with its
owner: `Held` (chunks that could not settle now, and why) takes a lock; events go through a
locked emit; the sender writes only the rows of the chunks it sends, on its own connection.

Readers in other processes get their turn whenever the run waits: the client tells the run's
writer before it waits (`placeflow.store.writer.Writer.waiting`), and the taker of the sender's
jobs does too; the writer never sleeps for them.

Verified files are loaded in batches of up to a row group's rows, each in one transaction
(`placeflow.runner.batch`): before the run's thread waits long on the service, and at the end
of each step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import InsufficientCredits, NotFound
from placeflow.api.feed import JobFeed
from placeflow.api.jobref import PendingJob
from placeflow.api.models import JobStatus
from placeflow.errors import CreditsRanOut
from placeflow.events import ClaimsEnded, ClaimsWaiting, Note
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary, account
from placeflow.pipeline.fetch import Fetched, fetch, on_disk
from placeflow.pipeline.poll import poll, unknown_job
from placeflow.pipeline.resend import post_age, vet
from placeflow.pipeline.submit import Uncertain, send_batch, submit_job
from placeflow.pipeline.writeahead import journaled
from placeflow.runner.batch import CHUNK_FAILURES, Batch
from placeflow.runner.held import Held
from placeflow.runner.sender import Sender, locked
from placeflow.runner.steps import Stages
from placeflow.state.lifecycle import RESENDABLE, UNCERTAIN, UNKNOWN_JOB
from placeflow.state.owners import carrying, owner_of
from placeflow.state.records import Chunk
from placeflow.state.runstate import RunState
from placeflow.store.writer import STRETCH

ENDED_OR_SUBMITTED = ("submitted", "completed", "cancelled")
"""The states of a chunk whose job the service may no longer know (`UNKNOWN_JOB`): submitted,
or ended before the run stopped and not loaded."""
CLAIM_POLL = (2.0, 15.0)
"""First and longest pause between two looks at the places other runs are buying (seconds)."""

Get = Callable[[], Fetched | None]
"""How a chunk's verified file is had: from disk, by a fetch, or from a synchronous answer."""


class _Carry:
    """One run's chunks carried out (see the module's docstring); `run` is the whole of it."""

    def __init__(
        self,
        r: Stages,
        api: PlaceApiClient,
        state: RunState,
        options: RunOptions,
        workdir: Path,
    ) -> None:
        self.r, self.api, self.state, self.options, self.workdir = r, api, state, options, workdir
        self.kind = options.mode
        self.emit = locked(r.emit)  # the sender emits from its own thread
        self.held = Held()
        self.batch = Batch(
            r, state, kind=self.kind, emit=self.emit, failed=self.failed, clock=api.clock
        )

    # --- one chunk's file, had and loaded -------------------------------------------------------

    def settle(self, chunk_no: int, get: Get) -> None:
        """One chunk's fetch, its file then loaded with the batch (`Batch`); its failure is its
        own, never the other chunks'."""
        try:
            fetched = get()
        except CHUNK_FAILURES as exc:
            self.failed(chunk_no, exc)
            return
        if fetched is not None:
            self.batch.add(fetched)

    def failed(self, chunk_no: int, exc: Exception) -> None:
        """A chunk's fetch or load failed: held, noted; the other chunks carry on."""
        why = f"chunk {chunk_no}: {type(exc).__name__}: {exc}"
        self.held.hold(chunk_no, why)
        self.state.note_error(chunk_no, why)
        self.emit(Note(f"{why}; the other chunks carry on"))

    def fetched(self, status: JobStatus) -> Get:
        return lambda: self.r.each("fetch", fetch)(
            self.api, self.state, status, workdir=self.workdir, emit=self.emit
        )

    def refetched(self, batch_id: str) -> Get:
        """An ended job's file fetched again; a job the service no longer knows is held."""

        def get() -> Fetched | None:
            try:
                status = self.api.job_status(batch_id)
            except NotFound as answer:
                unknown_job(self.state, batch_id, answer, self.emit)
                return None
            return self.fetched(status)()

        return get

    # --- the order -----------------------------------------------------------------------------

    def say_what_resume_settles(self) -> None:
        """On a resume with job POSTs that got no answer longer ago than the idempotency
        window, say plainly what it can settle and what it cannot."""
        now, window = self.state.now(), self.options.idempotency_window
        chunks = self.state.chunks("planned", "submitted")
        lost = [c for c in chunks if c.status == "planned" and c.sending_at is not None]
        past = [c for c in lost if post_age(c, now) > window]
        if not past:
            return
        attached = sum(1 for c in chunks if c.status == "submitted" and c.batch_id)
        unsent = sum(1 for c in chunks if c.status == "planned" and c.sending_at is None)
        oldest = max(post_age(c, now) for c in past)
        self.emit(
            Note(
                f"resuming {self.state.run_id}: {attached} submitted job(s) are re-attached and"
                f" loaded, {unsent} chunk(s) never sent are sent; {len(past)} chunk(s) whose"
                f" POST got no answer up to {oldest:,.0f} s ago, past the idempotency window"
                f" ({window:g} s), may have created jobs the service no longer replays: each"
                " is sent only if the key's usage shows it created none, else held as uncertain"
                " (--resend-uncertain sends it, accepting a possible double charge)"
            )
        )

    def ended_before(self) -> None:
        """Chunks that ended and were not loaded before the run stopped (a crash)."""
        for chunk in self.state.chunks("completed", "cancelled"):
            found = on_disk(self.state, chunk)
            if found is not None:
                self.settle(chunk.chunk_no, _given(found))
            elif chunk.route == "job" and chunk.batch_id:
                self.settle(chunk.chunk_no, self.refetched(chunk.batch_id))
            else:
                self.state.reopened(chunk.chunk_no)
        self.batch.flush()

    def send_sync(self) -> None:
        """Synchronous batches, one at a time, each answer's file loaded with the batch (`Batch`:
        at a wait on the service once the oldest has waited, and when the step ends). Their
        waits are short when the run's own work is slower than the key's rate: the writer then
        lets go at a request once it has held the file `STRETCH` seconds (`Writer.stretch`), and
        at the last one's, so that the step's end is a stretch of its own (`Batch.left`)."""
        chunks = [c for c in self.state.chunks("planned", "submitted") if c.route == "sync"]
        self.state.db.stretch = STRETCH if chunks else None
        try:
            self._send_sync(chunks)
        finally:
            self.state.db.stretch = None
        self.batch.flush()

    def _send_sync(self, chunks: list[Chunk]) -> None:
        for i, chunk in enumerate(chunks):
            self.batch.left(len(chunks) - i)  # the last one ends the writer's stretch
            sent = self.r.each("send-batch", send_batch)(
                self.api, self.state, chunk, kind=self.kind, workdir=self.workdir,
                emit=self.emit, resend=self.options.resend_uncertain,
            )  # fmt: skip
            if isinstance(sent, Uncertain):
                self.held.hold(chunk.chunk_no, sent.why, uncertain=True)
            else:  # its answer is recorded (a file, its sha256): loaded with the batch
                self.settle(chunk.chunk_no, _given(sent))

    def resend_held(self) -> None:
        """Held jobs sent again as new ones, when --resend-uncertain accepts it."""
        if not self.options.resend_uncertain:
            return
        for chunk in self.state.chunks(*ENDED_OR_SUBMITTED):
            if chunk.error_code in RESENDABLE:
                why = RESENDABLE[str(chunk.error_code)]
                self.state.resend_held(chunk.chunk_no, why)
                self.held.release(chunk.chunk_no)  # its file was looked for once more above
                again = "its places are sent again (--resend-uncertain)"
                self.emit(Note(f"chunk {chunk.chunk_no}: job {chunk.batch_id} {why}; {again}"))

    def send_jobs(
        self, to_send: list[Chunk], own: RunState, feed: JobFeed, stopping: Callable[[], bool]
    ) -> None:
        """The sender thread's work: each planned job chunk vetted, submitted and handed to the
        poller; `own` is the sender's RunState, on its own connection."""
        for chunk in to_send:
            if stopping():
                return
            verdict = vet(self.api, own, chunk, self.options, own.now())
            if not verdict.send:
                self.held.hold(chunk.chunk_no, verdict.why, uncertain=True)
                own.uncertain(chunk.chunk_no, verdict.why, possible=chunk.rows)
                self.emit(Note(verdict.why))
                continue
            if chunk.sending_at is not None and not verdict.replay:  # new work, not a replay
                own.not_sent(chunk.chunk_no)
                chunk = replace(chunk, sending_at=None)
            sent = self.r.each("submit", submit_job)(
                self.api, own, chunk, kind=self.kind, emit=self.emit,
                window=self.options.idempotency_window,
            )  # fmt: skip
            if isinstance(sent, Uncertain):
                self.held.hold(chunk.chunk_no, sent.why, uncertain=True)
                continue
            feed.put(sent.pending(self.api.clock()))

    def jobs(self) -> None:
        """Job chunks submitted by a sender beside the poll; each settled as it ends. A POST
        whose answer was lost longer ago than the idempotency window (a resume of a dead
        owner's run) is sent last, once the others have settled: nothing of the run in
        flight, the key's usage can tell whether it created a job (`pipeline.resend.vet`)."""
        planned = [c for c in self.state.chunks("planned") if c.route == "job"]
        now, window = self.state.now(), self.options.idempotency_window
        late = {c.chunk_no for c in planned if post_age(c, now) > window}
        if self.options.resend_uncertain:
            late = set()
        submitted = self.state.chunks("submitted")
        # a service that answers at once leaves no wait long enough to let go at: the writer
        # lets go at a request once it has held the file STRETCH s, as the synchronous route's
        self.state.db.stretch = STRETCH if planned or submitted else None
        try:
            self._jobs([c for c in planned if c.chunk_no not in late], submitted)
            if late:
                self._jobs([c for c in planned if c.chunk_no in late], [])
        finally:
            self.state.db.stretch = None

    def _jobs(self, to_send: list[Chunk], submitted: list[Chunk]) -> None:
        state, options = self.state, self.options
        resumed = [PendingJob(c.batch_id) for c in submitted if c.batch_id]
        send = partial(self.send_jobs, to_send) if to_send else None
        if to_send:
            self.r.expect("submit", "poll")  # the data's order, side by side
        with Sender(state, send) as sender:
            if sender.feed is not None:  # waiting for submissions is the readers' turn too

                def on_wait(seconds: float | None) -> None:
                    self.batch.before_wait(seconds)
                    state.db.waiting(0.0)

                sender.feed.on_wait = on_wait
            polled = self.r.stream("poll", poll)
            for status in polled(
                self.api, state, jobs=resumed, feed=sender.feed, timeout=options.poll_timeout,
                stuck_after=options.stuck_after, watch=options.watch_every, emit=self.emit,
            ):  # fmt: skip
                self.settle(state.chunk_of(status.batch_id), self.fetched(status))
            self.batch.flush()
        sender.raise_error()
        for chunk in state.chunks(*ENDED_OR_SUBMITTED):
            if chunk.error_code == UNKNOWN_JOB:
                self.held.hold(
                    chunk.chunk_no,
                    f"chunk {chunk.chunk_no}: job {chunk.batch_id} is unknown to the service"
                    " (resume --resend-uncertain sends it again)",
                )

    def await_claims(self) -> None:
        """The places this run left to other runs (claimed), waited for until their owners
        answer them, stop, or `claim_wait` runs out; the rest are answered when those runs
        load them (the account says which and how to finish them)."""
        waiting = self._waiting()
        if not waiting:
            return
        clock, wait = self.api.clock, self.options.claim_wait
        owners = ", ".join(f"{run_id} ({n:,})" for run_id, n in waiting)
        said = f"waiting up to {wait:g} s for places bought by run(s) {owners}"
        self.emit(Note(said))  # said on stderr (the CLI), announced (a flow's events)
        self.emit(ClaimsWaiting(self.state.run_id, dict(waiting), wait, said))
        deadline, pause = clock() + wait, CLAIM_POLL[0]
        first = dict(waiting)
        while waiting and clock() < deadline:
            self.api.pause(min(pause, max(0.0, deadline - clock())))
            pause = min(pause * 1.5, CLAIM_POLL[1])
            waiting = self._waiting()
        ended = self._wait_ended(first, dict(waiting), wait)
        self.emit(Note(ended))
        self.emit(ClaimsEnded(self.state.run_id, dict(waiting), ended))

    def _wait_ended(self, first: dict[str, int], left: dict[str, int], wait: float) -> str:
        """How the wait for other runs' places ended, run by run."""
        now, said = self.state.now(), []
        for run_id in first:
            if run_id in left:
                said.append(f"{run_id}: {left[run_id]:,} place(s) still to come after {wait:g} s")
                continue
            owner = owner_of(self.state.con, run_id)
            if owner is None or owner.status != "running" or owner.alive(now):
                said.append(f"{run_id}: {owner.status if owner else 'gone'}")
                continue
            ends = owner.lease_ends(now)
            passed = f", its lease passed at {ends:%H:%M:%S}" if ends else ""
            said.append(
                f"{run_id}: its owner, {owner.describe()}, stopped beating{passed}; its places"
                f" are left to `placeflow resume {run_id}`"
            )
        return "stopped waiting for places bought by other runs: " + "; ".join(said)

    def _waiting(self) -> list[tuple[str, int]]:
        """(run, places) still to come from owners that are alive and running."""
        now = self.state.now()
        out = []
        for claim in self.state.claims():
            owner = owner_of(self.state.con, claim.owner_run_id) if claim.waiting else None
            if owner is not None and owner.status == "running" and owner.alive(now):
                out.append((claim.owner_run_id, claim.waiting))
        return out

    def in_flight(self) -> bool:
        """Whether something of the run is left in flight at the service: a job submitted and
        not ended (a synchronous batch `submitted` is one whose answer was lost, billed or not:
        not in flight unless unjudged), or a job POST whose answer was lost. A run that stops so
        stays active in the key's journal, for whoever resumes it."""
        open_ = [
            c for c in self.state.chunks("submitted")
            if not (c.route == "sync" and c.error_code == UNCERTAIN)
        ]  # fmt: skip
        lost = [c for c in self.state.chunks("planned") if c.sending_at is not None]
        return bool(open_ or lost)

    def run(self, started: datetime) -> RunSummary:
        """Every step in order, the run active in the key's spend journal meanwhile
        (`placeflow.pipeline.writeahead.journaled`); the run marked interrupted when chunks are
        held or credits ran out (raised as `CreditsRanOut` after the account, which runs however
        the run ends)."""
        stopped: str | None = None
        try:
            with journaled(self.api, self.state.run_id, self.in_flight), self.batch.waits(self.api):
                try:
                    self.say_what_resume_settles()
                    self.ended_before()
                    self.send_sync()
                    self.resend_held()
                    self.jobs()
                    self.await_claims()
                    held = self.held.message(self.state.run_id)
                    if held:
                        self.state.interrupted(held)
                except InsufficientCredits as exc:
                    self.batch.flush()  # what came back before the credits ran out
                    stopped = (
                        f"credits ran out: {exc}. Add credits, then `placeflow resume"
                        f" {self.state.run_id}`; chunks already submitted are kept"
                    )
                    self.emit(Note(stopped))
                    self.state.interrupted(stopped)
        finally:
            with self.batch.stretched():  # its request to the service may end a long hold
                summary = self.r.stage("account", account)(self.state, self.api, started=started)
        if stopped:
            raise CreditsRanOut(stopped, run_id=self.state.run_id, summary=summary)
        return summary


def carry_out(
    r: Stages,
    api: PlaceApiClient,
    state: RunState,
    options: RunOptions,
    workdir: Path,
    started: datetime,
) -> RunSummary:
    """submit → poll → fetch → load for every chunk not yet loaded, then account (see the
    module's docstring)."""
    with carrying(state.run_id, con=state.con, clock=state.now):
        return _Carry(r, api, state, options, workdir).run(started)


def _given(fetched: Fetched | None) -> Get:
    return lambda: fetched
