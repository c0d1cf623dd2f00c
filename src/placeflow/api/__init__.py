"""Typed client and shared shapes for the place-data service."""

from placeflow.api.client import JobSubmission, PlaceApiClient
from placeflow.api.download import VerifiedFile, download_result
from placeflow.api.errors import PlaceflowError, TransientError
from placeflow.api.limiter import RateLimiter
from placeflow.api.poller import JobPoller
from placeflow.api.retry import RetryPolicy
from placeflow.fields import RateLimits

__all__ = [
    "JobPoller",
    "JobSubmission",
    "PlaceApiClient",
    "PlaceflowError",
    "RateLimiter",
    "RateLimits",
    "RetryPolicy",
    "TransientError",
    "VerifiedFile",
    "download_result",
]
