"""A torso under two arms in the closed loop over DDS: one simulator, one controller, one
trajectory over every joint of the tree (torso and both arms), synchronous on simulated time.

Reference: the trees' bound (docs/dynamics.md), RMS tracking error below 1e-3 rad (or m, for the
torso lift) on every joint with computed torque; every joint really moves, and every process exits
0. Arms: urdf/dual_arm.urdf (shipped: a torso lift under two copies of the default arm), and
Tiago++ of example-robot-data (a torso lift under two 7-joint arms, with its own stiff damping
and friction), whose joints are given as parameters, as a user of their own tree would.
"""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.loop import closed_loop  # noqa: E402
from harness.metrics import faults, spans, tracking_figures  # noqa: E402

TIAGO_JOINTS = ["torso_lift_joint", *(f"arm_{side}_{k}_joint" for side in ("left", "right")
                                      for k in range(1, 8))]


def _check(result, n):
    assert result["joint_names"] and len(result["joint_names"]) == n
    assert spans(result["t"], 10.0)  # the whole trajectory (errors on the ticks recorded)
    assert np.ptp(result["reference"], axis=0).min() > 0.02  # every joint moved, the torso too
    rms, worst = tracking_figures(result)
    print(f"RMS per joint: {np.array2string(rms, precision=2)}; worst |e| {worst.max():.2e}")
    assert np.all(rms < 1e-3), rms
    assert set(result["exit_codes"].values()) == {0}
    assert not faults(result), faults(result)
    assert "Traceback" not in "".join(result["logs"].values())


def test_the_shipped_tree_tracks_on_every_joint(tmp_path):
    _check(closed_loop("dual_arm", 10.0, None, tmp_path, 41), 15)


def test_tiago_dual_tracks_with_its_torso_and_both_arms(tmp_path):
    from conftest import robots_dir
    urdf = robots_dir() / "tiago_description/robots/tiago_dual.urdf"
    joints = {"joints": TIAGO_JOINTS}
    # torso 0.15 m up; both arms bent, inside their joint limits
    start = [0.15, *([0.2, 0.3, 1.2, 1.0, 0.0, 0.3, 0.0] * 2)]
    result = closed_loop(str(urdf), 10.0, None, tmp_path, 42, controller_params=joints,
                         simulator_params={**joints, "initial_positions": start},
                         demo_params=joints)
    _check(result, 15)
