"""A pytest plugin that writes one case record per test for `toolpin
compare` (docs/harness.md): the test's node id as the case, whether it
passed, and, through the ``toolpin_case`` fixture, the tool calls, turns
and cost of the run.

It is active under `toolpin evals run` (records go to
``$TOOLPIN_OUTPUT_DIR/cases.jsonl``) or with ``--toolpin-cases PATH``;
otherwise it does nothing. The wheel registers it (entry point
``pytest11``); from a source tree, load it with ``-p toolpin.pytest_plugin``.
"""

import os

import pytest

from .harness import tool_calls_from, write_case

_RECORDER = pytest.StashKey()
_REPORTS = pytest.StashKey()


class CaseRecorder:
    """What a test tells about its run, written with its outcome."""

    def __init__(self):
        self.tool_calls = None
        self.turns = None
        self.cost = None
        self.score = None

    def record(self, *sdk_objects):
        """Adds the tool calls in SDK objects (a Chat Completion, a
        Responses response, an Anthropic message, their parts or lists of
        them), in order; returns them."""
        calls = tool_calls_from(*sdk_objects)
        self.tool_calls = (self.tool_calls or []) + calls
        return calls

    def call(self, name, arguments=None):
        """Adds one tool call by name, exactly as the model emitted it."""
        entry = {"name": name}
        if arguments is not None:
            entry["arguments"] = arguments
        self.tool_calls = (self.tool_calls or []) + [entry]

    def turn(self, count=1):
        self.turns = (self.turns or 0) + count

    def add_cost(self, input_tokens=None, output_tokens=None, usd=None):
        cost = self.cost or {}
        for key, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens), ("usd", usd)):
            if value is not None:
                cost[key] = cost.get(key, 0) + value
        self.cost = cost


def pytest_addoption(parser):
    parser.addoption(
        "--toolpin-cases",
        metavar="PATH",
        default=None,
        help="write one toolpin case record per test to PATH (default under `toolpin evals run`: $TOOLPIN_OUTPUT_DIR/cases.jsonl)",
    )


def _target(config):
    path = config.getoption("toolpin_cases")
    if path:
        return path
    out = os.environ.get("TOOLPIN_OUTPUT_DIR")
    return os.path.join(out, "cases.jsonl") if out else None


@pytest.fixture
def toolpin_case(request):
    """The recorder of this test's run (see ``CaseRecorder``)."""
    recorder = CaseRecorder()
    request.node.stash[_RECORDER] = recorder
    return recorder


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    target = _target(item.config)
    if target is None:
        return
    reports = item.stash.setdefault(_REPORTS, [])
    reports.append(report)
    if report.when != "teardown":
        return
    if any(r.skipped for r in reports) and not any(r.failed for r in reports):
        return  # skipped: no run to compare
    failed = [r for r in reports if r.failed]
    error = None
    if failed:
        crash = getattr(failed[0].longrepr, "reprcrash", None)
        error = crash.message if crash is not None else str(failed[0].longrepr).splitlines()[-1:]
        if isinstance(error, list):
            error = error[0] if error else None
    recorder = item.stash.get(_RECORDER, None)
    write_case(
        item.nodeid,
        not failed,
        tool_calls=recorder.tool_calls if recorder else None,
        turns=recorder.turns if recorder else None,
        cost=recorder.cost if recorder else None,
        score=recorder.score if recorder else None,
        error=error,
        path=target,
    )
