"""make demo's arms: what it runs and the one line it gives for what it cannot (harness.demo.
check_arm, then main's exit code). Reference: load_chain's own rules (grippers locked, ties
refused) and example-robot-data's URDFs."""

import subprocess
import sys

from conftest import PACKAGE_DIR, robots_dir
from harness.demo import check_arm


def test_arms_that_run_and_the_line_for_those_that_cannot():
    robots = robots_dir()
    assert check_arm("default_arm") is None
    assert check_arm("dual_arm") is None  # its own config file names the joints
    assert check_arm(str(robots / "panda_description/urdf/panda.urdf")) is None  # fingers locked
    baxter = str(robots / "baxter_description/urdf/baxter.urdf")
    assert "choose one with TIP=LINK, or both with JOINTS=" in check_arm(baxter)
    assert check_arm(baxter, tip="left_gripper_base_link") is None
    assert "out of scope" in check_arm(str(robots / "go1_description/urdf/go1.urdf"))
    assert "tip_link 'nowhere' is not a link" in check_arm("default_arm", tip="nowhere")


def test_make_demo_refuses_in_one_line_before_starting_anything():
    go1 = robots_dir() / "go1_description/urdf/go1.urdf"
    out = subprocess.run([sys.executable, "-m", "harness.demo", "--arm", str(go1)], cwd=PACKAGE_DIR,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    assert len(out.stderr.strip().splitlines()) == 1 and "out of scope" in out.stderr, out.stderr


def test_make_demo_refuses_an_unknown_mode_naming_the_demos_modes():
    out = subprocess.run([sys.executable, "-m", "harness.demo", "--mode", "bogus"],
                         cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.strip().splitlines() == [
        "make demo: MODE=bogus is not one of computed_torque, feedforward, gravity_pd, "
        "cartesian, cartesian_impedance, contact"]
