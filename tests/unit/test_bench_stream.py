# SPDX-License-Identifier: MIT
"""scripts/bench.py's stream step: MB/s are what the runs' bytes and host
seconds say, and a run that moved nothing or took no time fails the step
rather than record a figure."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_rates_median_and_spread():
    s = bench.stream_summary([(48_000_000, 0.2), (48_000_000, 0.16), (48_000_000, 0.4)])
    assert s["runs_mb_s"] == [240.0, 300.0, 120.0]
    assert s["median_mb_s"] == 240.0 and s["min_mb_s"] == 120.0 and s["max_mb_s"] == 300.0
    assert s["runs_s"] == [0.2, 0.16, 0.4]


@pytest.mark.parametrize("samples", [[], [(0, 0.2)], [(48_000_000, 0.0)],
                                     [(48_000_000, 0.2), (48_000_000, -1.0)]])
def test_broken_runs_fail(samples):
    with pytest.raises(RuntimeError, match="stream"):
        bench.stream_summary(samples)


def test_the_step_is_listed():
    assert "stream" in bench.__doc__.split("steps:")[1].split(";")[0].split()
