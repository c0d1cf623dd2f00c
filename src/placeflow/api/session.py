"""The request machinery under `PlaceApiClient`: rate limit, send, classify, retry or raise.

A request is retried only on a `TransientError`. A charged request (validate, enrich, research)
whose attempt may have reached the service is retried only when the caller allows a double
charge, and then the possible extra charge is recorded for the credit ledger.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from typing import Literal, Self, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from placeflow.api.attempts import Chain, PossibleDoubleCharge, maybe_sent, within
from placeflow.api.errors import (
    OutcomeUnknown,
    RateLimited,
    ServiceUnavailable,
    TransientError,
    UnexpectedResponse,
    UnsafeRedirect,
)
from placeflow.api.failures import error_from_response, error_from_transport
from placeflow.api.journal import SpendJournal
from placeflow.api.limiter import URGENT_RESERVE, RateGate, RateLimiter
from placeflow.api.models import PricingCard
from placeflow.api.retry import PromptRetry, RetryPolicy
from placeflow.api.transport import (
    MAX_REDIRECTS,
    check_redirect,
    context_for,
    guard_no_credentials,
    is_loopback_host,
    key_only_to,
    origin,
    tls_context,
)
from placeflow.errors import OptionsError
from placeflow.fields import RateLimits
from placeflow.support.redact import Secret
from placeflow.support.text import printable_logger

log = printable_logger("placeflow.api")

M = TypeVar("M", bound=BaseModel)
Safety = Literal["safe", "keyed", "charged"]
"""How a request may be retried: `safe` (GET, DELETE) and `keyed` (carries an Idempotency-Key)
always; `charged` only when it surely was not processed, or the caller allows a double charge."""

ACCOUNTING_RETRY = RetryPolicy(max_attempts=40, initial_backoff=1.0, max_backoff=30.0, budget=900.0)
"""The patience of accounting calls (GET /v1/usage): a burst of 5xx lasting minutes is waited
out, not turned into a failed run; after it the figure is `UsageUnknown`."""


class ApiSession:
    """What every request shares: the HTTP clients, the key, the rate limiter, the retry policy.

    Nothing is read from the environment: pass the base URL, the key, the tier's `limits` (or a
    `limiter` shared with other clients of the same key), timeouts and the retry policy. Pass an
    httpx `transport` to mount a sandbox in-process, and `clock`/`sleep` to make waiting virtual.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        limits: RateLimits | None = None,
        limiter: RateGate | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008 - frozen, so a shared default is safe
        prompt: PromptRetry = PromptRetry(),  # noqa: B008 - frozen too
        accounting_retry: RetryPolicy = ACCOUNTING_RETRY,
        allow_insecure_http: bool = False,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] | None = None,
        on_possible_double_charge: Callable[[PossibleDoubleCharge], None] | None = None,
        journal: SpendJournal | None = None,
        waiting: Callable[[float], None] | None = None,
    ) -> None:
        if limits is not None and limiter is not None:
            raise OptionsError("pass limits or a shared limiter, not both")
        self.base_url = base_url.rstrip("/")
        self._origin = origin(self.base_url)
        if self._origin[0] not in ("http", "https"):
            raise OptionsError(f"base_url must be http(s)://host[:port], not {base_url!r}")
        if self._origin[0] == "http" and not (
            allow_insecure_http or is_loopback_host(self._origin[1])
        ):
            raise OptionsError(
                f"base_url {base_url!r} is plain http to a host that is not loopback: the key "
                "would cross the network unencrypted. Use https, or pass "
                "allow_insecure_http=True if this network is trusted."
            )
        self._key = Secret(api_key)
        self.limiter: RateGate = limiter or RateLimiter(
            limits, clock=clock, sleep=sleep, reserve=URGENT_RESERVE
        )
        self.journal = journal
        """The key's spend journal shared with this machine's other processes, when known:
        whose spend a usage delta may hold besides this run's (`placeflow.api.journal`)."""
        self.retry = retry
        self.prompt = prompt
        """How a keyed POST whose answer was lost is replayed at once (`PromptRetry`)."""
        self.accounting_retry = accounting_retry
        self.clock = clock
        self.wall_clock = wall_clock
        self.sleep = sleep
        self.waiting = waiting
        """Told before the client waits, with how long it expects to (0: a request whose answer
        may come at once): a run lets go of its warehouse then (`placeflow.store.writer`)."""
        # jitter from a generator of its own: the global `random` state is the caller's
        self._rand = rand or random.Random().random  # noqa: S311 - jitter, not secrets
        self._on_possible_double_charge = on_possible_double_charge
        self._lock = threading.Lock()
        self._double_charges: list[PossibleDoubleCharge] = []
        self._pricing: tuple[float, PricingCard] | None = None
        agent = {"User-Agent": f"placeflow/{version('placeflow')}"}
        http_timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=agent,
            timeout=http_timeout,
            verify=context_for(self.base_url),  # its requests go to the base URL alone
            transport=transport,
            follow_redirects=False,  # httpx would carry X-API-Key across a redirect
            event_hooks={"request": [key_only_to(self._origin)]},
        )
        self._file_client = (agent, http_timeout, transport)
        self._files: httpx.Client | None = None
        self._files_lock = threading.Lock()

    @property
    def files(self) -> httpx.Client:
        """The result-file client: no default headers, no key, refuses to send a credential.
        Made at its first download (a run that downloads nothing reads no CA bundle for it)."""
        with self._files_lock:
            if self._files is None:
                headers, timeout, transport = self._file_client
                self._files = httpx.Client(
                    headers=headers,
                    timeout=timeout,
                    transport=transport,
                    verify=tls_context(),
                    follow_redirects=False,  # followed by `stream_file`, where a download may go
                    event_hooks={"request": [guard_no_credentials]},
                )
            return self._files

    # --- lifecycle and display -----------------------------------------------------------

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key={self._key.hint!r})"

    @property
    def key_hint(self) -> str:
        return self._key.hint

    def close(self) -> None:
        self._http.close()
        with self._files_lock:
            if self._files is not None:
                self._files.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def pause(self, seconds: float) -> None:
        """Wait `seconds` (a poll's, a backoff's): `waiting` is told first, and the time it took
        (a run's let-go, a checkpoint) comes off the wait, so a poll planned for when a job ends
        is not made late by it."""
        if self.waiting is not None:
            before = self.clock()
            self.waiting(seconds)
            seconds = max(0.0, seconds - (self.clock() - before))
        self.sleep(seconds)

    @property
    def possible_double_charges(self) -> list[PossibleDoubleCharge]:
        """Every retry so far that may have been charged a second time, for the credit ledger."""
        with self._lock:
            return list(self._double_charges)

    @property
    def possible_extra_credits(self) -> int:
        return sum(c.credits for c in self.possible_double_charges)

    @contextmanager
    def stream_file(self, url: str) -> Iterator[httpx.Response]:
        """GET a result file with the credential-free client (no rate limit: not the API).

        Redirects are followed only from https to https on public hosts (a download that began
        on loopback, the sandbox, may stay on loopback), at most `MAX_REDIRECTS` hops; any
        other raises `UnsafeRedirect` before the new host is contacted.
        """
        current = httpx.URL(url)
        loopback = is_loopback_host(current.host)
        hops = 0
        while True:
            response = self.files.send(self.files.build_request("GET", current), stream=True)
            if not response.is_redirect:
                break
            location = response.headers.get("Location", "")
            response.close()
            target = current.join(location)
            hops += 1
            if hops > MAX_REDIRECTS:
                raise UnsafeRedirect(f"more than {MAX_REDIRECTS} redirects fetching a result file")
            check_redirect(current, target, loopback_origin=loopback)
            current = target
        try:
            yield response
        finally:
            response.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        safety: Safety,
        body: bytes | None = None,
        idempotency_key: str | None = None,
        allow_double_charge: bool = False,
        possible_credits: int = 0,
        authenticate: bool = True,
        retry: RetryPolicy | None = None,
        replay_window: float | None = None,
        sent_at: float | None = None,
        chain: Chain | None = None,
        urgent: bool = False,
    ) -> httpx.Response:
        """One request, retried on a `TransientError` as its `safety` allows (see `Safety`).

        A keyed request (an Idempotency-Key) whose attempt may have reached the service is
        replayed at once (`prompt`: a few tries a few milliseconds apart, each taking the next
        rate-limit slot before new requests) while the service surely still has its key. With
        `replay_window` (a caller that can ask the usage), past the prompt tries `OutcomeUnknown`
        is raised (its `first_sent`, the client's clock of the first attempt that may have
        reached the service) so that the usage is asked before it is sent again, and no attempt
        goes out more than `replay_window` seconds after that first one (this call's, or
        `sent_at`, an earlier call's or process's): a service that forgot the key would take
        the replay for new work. Without it, replays go on with backoff. `chain`, when given,
        is told how the attempts went (`Chain`).
        """
        endpoint = f"{method} {path}"
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        if authenticate:
            headers["X-API-Key"] = self._key.reveal()
        policy = retry or self.retry
        chain = chain if chain is not None else Chain()
        chain.first_sent = sent_at  # when the first attempt that may have reached it left
        started = self.clock()
        waited = 0.0
        attempt = prompted = 0
        while True:
            attempt += 1
            reached = chain.first_sent
            if self.waiting is not None:
                self.waiting(self.limiter.delay())
            self.limiter.acquire(urgent=urgent or reached is not None)  # replays first
            if replay_window is not None and reached is not None:
                within(endpoint, replay_window, self.clock(), reached, possible_credits, chain.lost)
            leaving = self.clock()
            try:
                try:
                    response = self._http.request(method, path, content=body, headers=headers)
                finally:
                    self.limiter.answered()  # counted from its answer: the latest it can count
            except httpx.TransportError as exc:
                error = error_from_transport(exc, endpoint=endpoint)
                if not isinstance(error, TransientError):
                    raise error from None  # the httpx error holds the request and its key
            else:
                if response.is_success:
                    chain.answered_sent = leaving
                    return response
                error = error_from_response(
                    response,
                    endpoint=endpoint,
                    now=self.wall_clock(),
                    secrets=(self._key.reveal(),),
                    idempotency_key=idempotency_key,
                )
                if not isinstance(error, TransientError):
                    raise error
            error.attempts = attempt
            if maybe_sent(error):
                chain.lost += 1
                if reached is None:
                    chain.first_sent = reached = leaving
            maybe_charged = safety == "charged" and maybe_sent(error)
            if maybe_charged and not allow_double_charge:
                raise OutcomeUnknown(
                    f"{endpoint}: no answer after the request may have been processed "
                    f"({type(error).__name__}); up to {possible_credits} credit(s) may have been "
                    "charged. Not retried, so as not to pay twice: check GET /v1/usage, or pass "
                    "allow_double_charge=True to retry such requests.",
                    endpoint=endpoint,
                    possible_credits=possible_credits,
                ) from error
            waits = isinstance(error, RateLimited | ServiceUnavailable)  # the service said wait
            if safety == "keyed" and reached is not None:
                if not waits and prompted < self.prompt.tries:
                    prompted += 1
                    log.info("%s: %s; prompt retry %d of %d", endpoint,
                             type(error).__name__, prompted, self.prompt.tries)  # fmt: skip
                    self.sleep(self.prompt.spacing)
                    continue
                if replay_window is not None:  # the caller asks the usage before a re-send
                    if waits:
                        self.limiter.defer(policy.delay(error, attempt, self._rand()))
                    raise OutcomeUnknown(
                        f"{endpoint}: no answer after {attempt} attempt(s), the first of which"
                        f" may have been processed ({type(error).__name__} last); not sent"
                        " again before the usage is asked whether it created a job",
                        endpoint=endpoint,
                        possible_credits=possible_credits,
                        first_sent=reached,
                        lost=chain.lost,
                    ) from error
            tried = attempt - prompted  # the prompt tries are the policy's first retry's
            delay = policy.delay(error, tried, self._rand())
            give_up = (
                tried >= policy.max_attempts
                or (error.wait or 0.0) > policy.max_server_wait
                or waited + delay > policy.budget
            )
            if give_up:
                elapsed = self.clock() - started
                error.add_note(f"gave up after {attempt} attempt(s) over {elapsed:.1f} s")
                raise error
            if maybe_charged:
                self._record_double_charge(endpoint, possible_credits, attempt, error)
            if waits:
                self.limiter.defer(delay)  # the server asked everyone sharing the key to wait
            log.warning(
                "%s: %s; retry %d of %d in %.2f s",
                endpoint,
                type(error).__name__,
                tried,
                policy.max_attempts - 1,
                delay,
            )
            self.pause(delay)
            waited += delay

    def _record_double_charge(
        self, endpoint: str, credits: int, attempt: int, error: TransientError
    ) -> None:
        event = PossibleDoubleCharge(
            endpoint=endpoint,
            credits=credits,
            attempt=attempt,
            reason=type(error).__name__,
            at=self.wall_clock(),
        )
        with self._lock:
            self._double_charges.append(event)
        log.warning(
            "%s: retrying after %s may charge up to %d credit(s) twice",
            endpoint,
            event.reason,
            credits,
        )
        if self._on_possible_double_charge is not None:
            self._on_possible_double_charge(event)

    def _parse(self, model: type[M], response: httpx.Response, endpoint: str) -> M:
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                for e in exc.errors(include_url=False, include_input=False)[:5]
            )
            raise UnexpectedResponse(
                f"{endpoint}: {response.status_code} response is not a {model.__name__} "
                f"({problems}). The service changed or a proxy answered; report it.",
                endpoint=endpoint,
                status_code=response.status_code,
            ) from None
