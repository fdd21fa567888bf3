"""Soak: minutes of simulated time at 1 kHz, synchronous (test/support/soak.py), separate processes.

`make test` (CI) soaks for 1 minute of simulated time, `make soak` for 10
(DYN_CONTROL_SOAK_SECONDS; about 1 s of wall time per simulated s here).
Bounds: each process's resident memory grows from a quarter of the run to its end by less than
11 kB per simulated second, about 11 bytes a tick (5 MB over the 450 s of a 10-minute soak),
and never needs less than 2 MB of room, for the allocator's steps (measured here over 3 minutes:
+0.4 MB, at about 205 MB); the RMS tracking error of every minute (every third, in a run under
3 minutes) stays below 1e-3 rad on every joint (measured 1e-5 to 6e-5), and the last one's is
at most 1.5x the first one's (measured 0.9x to 1.0x a minute). The thirds of the 1-minute run
get 2x: they are cut in simulated time from the simulator's start, so the first one holds a
stretch of holding whose length the start-up sets, and they see different stretches of the
sines (1.23x seen, and 1.51x on joint 7 in one quiet fresh-clone run of 2026-12-06). Counting
them from the controller's reported trajectory start was tried and gave two answers, 0.46x and
1.30x, over three runs: not understood, so not done.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import SUPPORT_DIR

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")

SECONDS = float(os.environ.get("DYN_CONTROL_SOAK_SECONDS", 60))
GROWTH_MB = max(2.0, 5.0 * 0.75 * SECONDS / 450)  # from a quarter of the run to its end


@pytest.fixture(scope="module")
def soak():
    res = subprocess.run([sys.executable, str(SUPPORT_DIR / "soak.py"), str(SECONDS),
                          "58"],
                         capture_output=True, text=True, timeout=30 * SECONDS + 300)
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"soak: {result['sim_seconds']:.0f} s simulated in {result['wall_seconds']:.0f} s, "
          f"{result['samples']} error samples")
    return result


def test_soak_ran_the_whole_time_and_exited_cleanly(soak):
    assert soak["sim_seconds"] >= SECONDS
    assert set(soak["exit_codes"].values()) == {0}


def test_resident_memory_does_not_grow(soak):
    for name, samples in soak["rss_mb"].items():
        start = samples[len(samples) // 4]
        print(f"{name}: {start:.1f} MB -> {samples[-1]:.1f} MB")
        assert samples[-1] - start < GROWTH_MB, (name, start, samples[-1], GROWTH_MB)


def test_tracking_error_does_not_grow(soak):
    windows = np.array(soak["rms_per_window"])
    print(f"RMS error per {soak['window_s']:.0f} s: largest {windows.max():.1e} rad, last/first "
          f"{(windows[-1] / windows[0]).max():.2f}")
    assert len(windows) >= 2 and np.all(windows < 1e-3), windows.max()
    growth = 1.5 if soak["window_s"] >= 60 else 2.0  # minutes, or the thirds (docstring)
    assert np.all(windows[-1] <= growth * windows[0] + 1e-7), windows[-1] / windows[0]
