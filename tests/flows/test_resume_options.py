"""What a resume is handed (by the flow and by the CLI's local path alike): only the options
given, so that a resume keeps the run's own poll timeout unless one is given (the CLI's `resume
--poll-timeout`, a deployment's parameter), and how often a live display wants jobs polled."""

from __future__ import annotations

from placeflow.options import RunOptions
from placeflow.runner.ending import resume_options

NOT_GIVEN = {"poll_timeout": None, "resend_uncertain": False, "watch_every": None}


def test_options_not_given_leave_the_run_its_own() -> None:
    """Nothing given: the run's own poll timeout, nothing resent, no watch."""
    assert resume_options(RunOptions()) == NOT_GIVEN


def test_options_given_are_passed_on() -> None:
    """A poll timeout, --resend-uncertain and a display's watch, given, are passed on."""
    given = RunOptions(poll_timeout=60, resend_uncertain=True, watch_every=6)
    assert resume_options(given) == {
        "poll_timeout": 60.0, "resend_uncertain": True, "watch_every": 6.0,
    }  # fmt: skip


def test_a_deployments_json_parameters_name_only_what_they_set() -> None:
    """A deployment's JSON options setting one thing leave the poll timeout the run's own."""
    options = RunOptions.model_validate({"resend_uncertain": True})
    assert resume_options(options) == {**NOT_GIVEN, "resend_uncertain": True}
