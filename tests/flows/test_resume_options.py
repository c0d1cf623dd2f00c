"""What the flow hands a resume: only the options given, so that a resume keeps the run's own
poll timeout unless one is given (the CLI's `resume --poll-timeout`, a deployment's parameter)."""

from __future__ import annotations

from placeflow.flows.run import resume_options
from placeflow.options import RunOptions


def test_options_not_given_leave_the_run_its_own() -> None:
    assert resume_options(RunOptions()) == {"poll_timeout": None, "resend_uncertain": False}


def test_options_given_are_passed_on() -> None:
    given = RunOptions(poll_timeout=60, resend_uncertain=True)
    assert resume_options(given) == {"poll_timeout": 60.0, "resend_uncertain": True}


def test_a_deployments_json_parameters_name_only_what_they_set() -> None:
    options = RunOptions.model_validate({"resend_uncertain": True})
    assert resume_options(options) == {"poll_timeout": None, "resend_uncertain": True}
