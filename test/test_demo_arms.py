"""make demo's arms: what it runs and the one line it gives for what it cannot (harness.demo.
check_arm, then main's exit code). Reference: load_chain's own rules (grippers locked, ties
refused) and example-robot-data's URDFs.
"""

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


def test_a_demo_the_arm_cannot_do_is_refused_in_one_line():
    """The Cartesian and contact demos move and push the hand in all three directions of the
    base: the seeds' planar 2R arm's link2 moves in one at its start (its Jacobian's position
    rows, our kinematics), so both are refused, before anything starts; the default arm, the
    two-armed tree and the UR5's file can do them.
    """
    from harness.demo import check_task
    for mode in ("cartesian", "contact"):
        assert check_task("two_link", mode) == (
            f"MODE={mode} needs a hand that moves in all three directions of the base frame; "
            "link2 moves in 1 at the start pose (its Jacobian's position rows have that rank): "
            "the demo circles in y-z and pushes along x")
        ur5 = str(robots_dir() / "ur_description/urdf/ur5_robot.urdf")
        for arm in ("default_arm", "dual_arm", ur5):
            assert check_task(arm, mode) is None, arm
    assert check_task("two_link", None) is None  # the joint-space demo runs on any arm
    out = subprocess.run([sys.executable, "-m", "harness.demo", "--arm", "two_link", "--mode",
                          "contact"], cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out


def test_two_arms_takes_no_mode_and_no_tip_each_arm_has_its_own():
    for extra, line in ((["--mode", "contact"], "make demo: two_arms: MODE=contact is not one of "
                         "ARM=two_arms's: each arm tracks its own trajectory"),
                        (["--tip", "link7"], "make demo: two_arms: TIP= and JOINTS= are each "
                         "arm's own in it")):
        out = subprocess.run([sys.executable, "-m", "harness.demo", "--arm", "two_arms", *extra],
                             cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and out.stdout == "", out
        assert out.stderr.strip().splitlines() == [line]


def test_make_teach_takes_a_trees_joints_from_its_config_and_refuses_in_one_line():
    # make teach ARM=dual_arm was a traceback (AmbiguousTip: it loaded the URDF without the
    # joints config/dual_arm.yaml names); an arm make demo refuses, make teach refuses alike
    from harness.demo import arm_chain
    chain = arm_chain("dual_arm")
    assert chain.n == 15 and chain.joint_names[0] == "torso_lift_joint"
    baxter = robots_dir() / "baxter_description/urdf/baxter.urdf"
    out = subprocess.run([sys.executable, "-m", "harness.teach", "--arm", str(baxter)],
                         cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=120)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1 and "choose one with TIP=LINK" in lines[0], out
