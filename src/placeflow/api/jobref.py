"""What is known of a bulk job to follow: its batch_id, and what its submission answered (its
eta, when it was created and meant to end), from which `placeflow.api.poller` schedules its
first poll and learns how true the service's etas are."""

from __future__ import annotations

from dataclasses import dataclass

from placeflow.api.client import JobSubmission
from placeflow.api.eta import JobTrack
from placeflow.api.models import TERMINAL_JOB_STATUSES, JobSubmitResponse
from placeflow.api.retry import parse_timestamp


@dataclass(frozen=True)
class PendingJob:
    """A job submitted earlier: its batch_id and the seconds from now until it should be done.

    Give what the submission answered too (`created_at`, `eta_completion_at`, both on the
    service's clock) and the poller learns from the job how true the service's etas are.
    """

    batch_id: str
    eta_seconds: float | None = None
    created_at: str | None = None
    eta_completion_at: str | None = None


JobRef = str | PendingJob | JobSubmission | JobSubmitResponse
"""A job to follow: its batch_id, or what is known of its eta (which schedules the first poll)."""


def anchor(track: JobTrack, ref: JobRef) -> None:
    """What a submission answer tells: when the job was created and meant to end (service
    clock), and its eta now."""
    job = ref.job if isinstance(ref, JobSubmission) else ref
    if isinstance(job, JobSubmitResponse | PendingJob):
        track.created = parse_timestamp(job.created_at)
        track.submitted_completion = parse_timestamp(job.eta_completion_at)
        track.eta = job.eta_seconds
        if track.created is None or track.submitted_completion is None:
            track.created = track.submitted_completion = None
    if isinstance(ref, JobSubmission) and ref.received_at is not None and not ref.replayed:
        # The answer is the job's first report, seen when it came: processed 0, and where
        # the service said it would end.
        track.seen_at = ref.received_at
        track.predicted = track.submitted_completion
        track.processed = 0


def job_ref(ref: JobRef) -> tuple[str, float | None]:
    """A job's batch_id and, when it was just submitted and is not yet over, its eta."""
    if isinstance(ref, PendingJob):
        return ref.batch_id, ref.eta_seconds
    job = ref.job if isinstance(ref, JobSubmission) else ref
    if isinstance(job, JobSubmitResponse):
        return job.batch_id, None if job.status in TERMINAL_JOB_STATUSES else job.eta_seconds
    return job, None
