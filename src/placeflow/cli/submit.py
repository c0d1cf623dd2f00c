"""`placeflow run URL... --deployment NAME`: a run submitted from any machine to the file-run
deployment, which a worker on the warehouse host carries out (docs/operations.md, "A team on
several machines").

The inputs are object-storage URLs (``s3://BUCKET/KEY``, globs in the key too): the worker
reads them, not this machine, so a local path is refused with how to upload it. Prefect stores
a flow run's parameters (its database, its UI), so nothing secret may travel in them: a URL
with user info or a query (credentials, a presigned signature) is refused before the flow run
is created; the worker reads object storage with its own AWS_* variables. Then it waits for the
flow run to end and prints the run's summary, read from the flow run's result artifact, with
the usual exit codes; `--no-wait` prints the flow run's id and returns at once.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from placeflow.cli.options import options_from_args

if TYPE_CHECKING:
    from prefect.client.schemas.objects import FlowRun
from placeflow.config import apply_prefect_defaults, prefect_server_url
from placeflow.errors import EXIT_FAILED, EXIT_OK, UsageError
from placeflow.options import RunOptions
from placeflow.support.objects import is_object_url
from placeflow.support.redact import url_has_password
from placeflow.support.text import printable

FILE_RUN_FLOW = "run_files"
ENDED = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def add_deployment_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--deployment",
        default=None,
        metavar="NAME",
        help="submit the run to this deployment of the file-run flow (NAME, or run_files/NAME)"
        " on the Prefect server PREFECT_API_URL names, instead of running it here: a worker on"
        " the warehouse host carries it out; the inputs must be s3:// URLs",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="with --deployment: print the flow run's id and return once it is created",
    )


def check_inputs(inputs: list[str]) -> None:
    """`UsageError` unless every input is an object-storage URL with nothing secret in it."""
    for given in inputs:
        if not is_object_url(given):
            raise UsageError(
                f"{given} is a local path: a deployment's run reads its inputs on the warehouse"
                " host, not here. Upload it to object storage first (e.g. `aws s3 cp"
                f" {given} s3://BUCKET/inputs/`) and give its s3:// URL"
            )
        parts = urlsplit(given)
        if url_has_password(given) or "@" in parts.netloc or parts.query or parts.fragment:
            raise UsageError(
                f"{parts.scheme}://{parts.hostname or ''}{parts.path}: an input URL with user"
                " info or a query (credentials, a signature) is refused: Prefect stores a flow"
                " run's parameters. Give the plain URL; the worker reads object storage with"
                " its own AWS_* variables"
            )


def submit(args: argparse.Namespace) -> dict[str, Any]:
    """Create the flow run of the deployment; wait for it: its summary dict, with its exit code
    (with --no-wait: the flow run's id, at once)."""
    inputs = list(args.inputs)
    check_inputs(inputs)
    options = options_from_args(args)  # checked here, before the flow run is created
    server = prefect_server_url()
    if server is None:
        raise UsageError(
            "--deployment needs PREFECT_API_URL: set it to the Prefect server the deployment"
            " is on (e.g. http://prefect.internal:4200/api)"
        )
    apply_prefect_defaults()
    from prefect.deployments import run_deployment

    name = args.deployment if "/" in args.deployment else f"{FILE_RUN_FLOW}/{args.deployment}"
    params: dict[str, Any] = {"inputs": inputs, "options": _given(options)}
    flow_run: FlowRun = run_deployment(  # type: ignore[assignment]  # sync here: a FlowRun
        name=name, parameters=params, timeout=0 if args.no_wait else None, poll_interval=2
    )
    if args.no_wait:
        said = f"flow run {flow_run.id} of {name} created on {server}"
        return {"flow_run_id": str(flow_run.id), "deployment": name, "status": "submitted",
                "message": said, "exit_code": EXIT_OK}  # fmt: skip
    return _result(flow_run)


def _given(options: RunOptions) -> dict[str, Any]:
    """The options that differ from the defaults, as the flow's parameter schema takes them
    (the `--map` and `--set` pairs as lists of pairs)."""
    default = RunOptions().model_dump(mode="json")
    given = {}
    for name, value in options.model_dump(mode="json").items():
        if name in ("mapping", "constants"):
            value = [[k, v] for k, v in value.items()] if value else None
        if value is not None and value != default[name]:
            given[name] = value
    return given


def _result(flow_run: FlowRun) -> dict[str, Any]:
    """The run's result dict from the flow run's result artifact; a flow run that ended
    without one (crashed, cancelled) as a failure with its state's message."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from placeflow.flows.artifacts import RESULT, read_result

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id]))
        )
    for artifact in found:
        if artifact.key == RESULT and isinstance(artifact.data, str):
            data = read_result(artifact.data)
            if data is not None:
                return data
    state = flow_run.state
    said = state.message if state is not None and state.message else "no result"
    kind = state.type.value if state is not None else "unknown"
    print(printable(f"placeflow: flow run {flow_run.id} ended {kind}: {said}"), file=sys.stderr)
    return {"status": "failed", "message": f"flow run {flow_run.id}: {said}",
            "exit_code": EXIT_FAILED}  # fmt: skip
