"""The scenario corpora of the repository (replay/scenarios: the contract's examples, our own, the generated
ones, the demo) pass through the live pipeline, and a wrong expectation fails. Nothing outside the
checkout is read: a plain `git clone` runs all of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.runner import ScenarioRunner
from replay.scenario import Scenario, load_scenarios
from services.common.settings import Settings

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "replay" / "scenarios"
SCENARIOS = load_scenarios(CORPUS)
EXAMPLES = {s.name for s in load_scenarios(CORPUS / "examples")}


@pytest.fixture(scope="module")
def runner(settings: Settings) -> ScenarioRunner:
    return ScenarioRunner(settings.api_url, settings.admin_token)


def test_corpora_are_present() -> None:
    assert len(SCENARIOS) >= 10, str(CORPUS)
    assert {"pool-exhaustion-basic", "retract-and-untrusted-text", "same-alert-different-cause",
            "zh-pool-paraphrase"} <= EXAMPLES  # the contract's examples live in the checkout
    names = [s.name for s in SCENARIOS]
    assert len(names) == len(set(names)), "every scenario once"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_passes(runner: ScenarioRunner, scenario: Scenario) -> None:
    result = runner.run(scenario)
    failed = [f"{r.step}: {r.check.name} ({r.check.detail})" for r in result.results if not r.check.passed]
    assert result.error is None, result.error
    assert not failed


def test_a_wrong_expectation_fails(runner: ScenarioRunner) -> None:
    base = next((s for s in SCENARIOS if s.name == "pool-exhaustion-basic"), None)
    assert base is not None, f"pool-exhaustion-basic is not in {CORPUS}"
    wrong = base.model_copy(deep=True)
    wrong.queries[0].expect.top1_cites = "INC-404"
    wrong.queries[1].expect.no_hints = False
    wrong.queries[1].expect.min_hints = 1
    result = runner.run(wrong)
    assert not result.passed
    assert {r.check.name for r in result.results if not r.check.passed} == {"top1 cites INC-404", "at least 1 hints"}
