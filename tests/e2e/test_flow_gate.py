"""Which rate gate a flow hands its target: Prefect's global concurrency limits under a Prefect
server of its own (PREFECT_API_URL), the machine's file-backed limiter otherwise."""

from __future__ import annotations

from placeflow.config import prefect_server_url
from placeflow.fields import RateLimits
from placeflow.runner.target import Target, shared_limiter
from placeflow.support.redact import Secret

BASE_URL = "http://127.0.0.1:9/"
KEY = "sk_gate_wiring_key_3d3d"


def target() -> Target:
    return Target(
        base_url=BASE_URL, api_key=Secret(KEY), label="test", limits=RateLimits.for_tier("paid")
    )


def test_prefect_server_url_is_read_from_the_environment_mapping() -> None:
    """PREFECT_API_URL (blank counts as unset) is what tells a flow it has a server of its own."""
    assert prefect_server_url({"PREFECT_API_URL": " http://127.0.0.1:4200/api "}) == (
        "http://127.0.0.1:4200/api"
    )
    assert prefect_server_url({"PREFECT_API_URL": "  "}) is None
    assert prefect_server_url({}) is None


def test_without_a_server_or_with_a_sandbox_the_machine_limiter_stays() -> None:
    """No server URL, or an embedded sandbox: the target is unchanged and its clients share the
    machine's limiter of the key (the library default)."""
    from placeflow.flows.rate_gate import gated

    plain = target()
    assert gated(plain, server_url=None, sandbox=False) is plain
    server = "http://127.0.0.1:4200/api"
    assert gated(plain, server_url=server, sandbox=True) is plain
    with plain.client() as client:
        assert client.limiter is shared_limiter(plain)


def test_under_a_server_clients_take_the_servers_limits(prefect_api: str) -> None:
    """Any flow run under a Prefect server (a deployment's, or the CLI's on an analyst's
    machine): its clients acquire through the machine's limiter and a PrefectRateGate, and the
    server holds one global concurrency limit per window of the key, with decay."""
    from prefect.client.orchestration import get_client

    from placeflow.flows.rate_gate import BothGates, PrefectRateGate, gated, limit_names

    plain = target()
    served = gated(plain, server_url=prefect_api, sandbox=False)
    assert isinstance(served.gate, BothGates)
    assert isinstance(served.gate.server, PrefectRateGate)
    assert served.gate.machine is shared_limiter(plain)
    with served.client() as client:
        assert client.limiter is served.gate
    names = limit_names(BASE_URL, Secret(KEY), plain.limits)
    with get_client(sync_client=True) as prefect:
        limits = [prefect.read_global_concurrency_limit_by_name(name) for name in names]
    assert [limit.name for limit in limits] == names
    assert all(limit.slot_decay_per_second and limit.slot_decay_per_second > 0 for limit in limits)
    assert all(KEY not in name for name in names)
