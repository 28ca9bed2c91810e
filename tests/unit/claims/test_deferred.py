"""scheduler.claims.deferred: failing background releases wait longer each
time."""

import pytest

from scheduler import claims
from tests.unit.claims.fakes import FailingReleases
from tests.unit.claims.fakes import new_uuid


def _claim_to_release(name: str) -> claims.Claim:
    return claims.Claim(name, new_uuid(), 1, new_uuid(), "a", "a.example",
                        1, 512, 1)


@pytest.mark.parametrize("interval, max_interval, waits", [
    # Doubling up to max_interval, from interval again after a release.
    (0.01, 0.05, [0.01, 0.02, 0.04, 0.05, 0.05, 0.01, 0.02]),
    # A first interval above max_interval is waited as it is.
    (0.08, 0.02, [0.08, 0.02, 0.02, 0.02, 0.02, 0.08, 0.02]),
])
def test_failing_background_releases_wait_longer_each_time(
        interval, max_interval, waits, monkeypatch):
    releases = claims.DeferredReleases(
        FailingReleases({"first": 5, "second": 2}), interval=interval,
        max_interval=max_interval)
    waited = []
    monkeypatch.setattr(releases, "_wait", waited.append)
    releases.add(_claim_to_release("first"))
    releases.add(_claim_to_release("second"))
    assert releases.wait_until_done(5)
    assert waited == waits
    assert releases.released == 2
