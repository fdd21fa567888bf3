"""`python -m dyn_control.describe`: the table a user reads first, and one-line errors."""

import subprocess
import sys

import numpy as np
import pytest
from conftest import PACKAGE_DIR, URDF_DIR
from examples import inertial, joint, link, robot


def run(*args):
    return subprocess.run([sys.executable, "-m", "dyn_control.describe", *map(str, args)],
                          capture_output=True, text=True, cwd=PACKAGE_DIR, timeout=120)


def test_table_lists_joints_masses_and_limits():
    out = run(URDF_DIR / "two_link.urdf")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("joint")]
    assert [r[0] for r in rows[1:]] == ["joint1", "joint2"]
    # joint, parent, type, axis (3), mass, COM (3), lower, upper, effort, velocity
    assert rows[1][1:3] == ["(base)", "revolute"] and rows[2][1] == "joint1"
    assert float(rows[1][6]) == 3.0 and float(rows[2][6]) == 2.0
    assert rows[1][12:] == ["60", "6"] and rows[2][12:] == ["30", "6"]
    assert "findings: none" in out.stdout and out.stdout.startswith("chain: ")


def test_a_tree_shows_its_branches():
    out = run(URDF_DIR / "dual_arm.urdf", "--joints", "torso_lift_joint,left_joint1,right_joint1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("tree: base_link -> left_link1, right_link1, 3 joints")
    rows = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()
            if line.split() and line.split()[0] in ("torso_lift_joint", "left_joint1",
                                                    "right_joint1")}
    assert rows == {"torso_lift_joint": "(base)", "left_joint1": "torso_lift_joint",
                    "right_joint1": "torso_lift_joint"}


def test_findings_are_listed_with_exit_1(tmp_path):
    # listed, not fatal: the table is printed; exit 1 because the nodes refuse such a URDF
    bad = tmp_path / "bad.urdf"
    bad.write_text(robot("b", link("base"), joint("j", "revolute", "base", "l"),
                         link("l", inertial(1.0, (0, 0, 0), np.diag([0.01, 0.01, 0.05])))))
    out = run(bad)
    assert out.returncode == 1, out.stderr
    assert "link 'l'" in out.stdout and "triangle inequality" in out.stdout


def test_a_negative_mass_is_a_finding_and_no_settling_time_is_made_up(tmp_path):
    bad = tmp_path / "negative.urdf"
    bad.write_text(robot("b", link("base"), joint("j", "revolute", "base", "l",
                                                  extra='<dynamics damping="1.0"/>'),
                         link("l", inertial(-1.0, (0, 0, 0), np.diag([0.01, 0.01, 0.01])))))
    out = run(bad)
    assert out.returncode == 1, out.stdout
    assert "mass" in out.stdout and "settles in" not in out.stdout, out.stdout


def test_two_arms_print_the_tree_and_name_its_own_flags():
    out = run(URDF_DIR / "dual_arm.urdf")
    assert out.returncode == 1
    assert "left_joint7 (revolute) -> left_link7" in out.stdout
    assert "right_joint1 (revolute) -> right_link1" in out.stdout
    assert out.stderr.strip().splitlines() == [
        "error: tip link is ambiguous: 2 paths of 8 movable joints end at links "
        "['left_link7', 'right_link7']; choose with --tip LINK or --joints J1,J2,..."]


def test_unusable_urdf_gives_one_line_and_exit_1(tmp_path):
    bad = tmp_path / "cycle.urdf"
    bad.write_text(robot("c", link("a"), link("b"), joint("j", "revolute", "a", "b"),
                         joint("k", "fixed", "b", "a")))
    out = run(bad, "--tip", "b")
    assert out.returncode == 1
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1
    assert "link 'a'" in out.stderr or "link 'b'" in out.stderr


def test_stiff_damping_is_a_warning(tmp_path):
    # damping 2 N m s/rad on 1e-4 kg m^2: time constant 5e-5 s, far below the 1 ms step; at
    # --dt 1e-5 the same joint is no longer stiff
    dyn = '<dynamics damping="2.0" friction="0.0"/>'
    arm = tmp_path / "stiff.urdf"
    arm.write_text(robot("s", link("base"), joint("wrist", "revolute", "base", "l", extra=dyn),
                         link("l", inertial(1.0, (0, 0, 0), np.diag([1.0, 1.0, 1e-4])))))
    out = run(arm)
    assert out.returncode == 0, out.stderr
    finding = [line for line in out.stdout.splitlines() if "stiff" in line]
    assert len(finding) == 1 and "joint 'wrist'" in finding[0] and "5e-05 s" in finding[0]
    assert "findings: none" in out.stdout and "warnings (the nodes run it):" in out.stdout
    assert "warnings" not in run(arm, "--dt", "1e-5").stdout


def test_a_moving_link_without_inertial_is_one_finding_not_a_traceback(tmp_path):
    """The seeds' 2R arm with link2's <inertial> taken out: joint2 moves nothing, M is
    singular; inspect names the joint and the link, exit 1 (the nodes refuse it).
    """
    text = (URDF_DIR / "two_link.urdf").read_text()
    start = text.index('<link name="link2"')
    end = text.index("</link>", start)
    body = text[start:end]
    stripped = body[:body.index("<inertial>")] + body[body.index("</inertial>") + 11:]
    arm = tmp_path / "no_inertial.urdf"
    arm.write_text(text[:start] + stripped + text[end:])
    out = run(arm)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert ("joint 'joint2' moves no mass: its link 'link2' and every link below it have no "
            "<inertial>") in out.stdout


def test_a_zero_pose_the_effort_limits_cannot_hold_is_said_with_the_joint_torque_and_limit():
    """Baxter's left arm (example-robot-data's file): at its zero pose (zeros, left_e1 moved
    10 % of its range off its stop, 0.05 rad below zero), left_s1 needs 55.92 N m against
    gravity (g(q), our inverse dynamics) over its 50 N m limit. inspect says so and where the
    simulator starts it instead, a pose that needs at most 80 % of every limit.
    """
    from conftest import robots_dir

    from dyn_control import gravity_torques, load_chain
    from dyn_control.poses import HOLD_SHARE, default_initial_positions
    path = robots_dir() / "baxter_description/urdf/baxter.urdf"
    out = run(path, "--tip", "left_gripper_base_link")
    assert out.returncode == 0, out.stderr
    assert ("joint 'left_s1' needs 55.92 N m against gravity at [0.0, 0.0, 0.0, 0.217, 0.0, "
            "0.0, 0.0], over its effort limit of 50 N m") in out.stdout
    chain = load_chain(path, tip_link="left_gripper_base_link")
    q0 = default_initial_positions(chain)
    assert f"starts such an arm where it can be held: {np.round(q0, 3).tolist()}" in out.stdout
    assert np.all(np.abs(gravity_torques(chain, q0)) <= HOLD_SHARE * chain.effort_limits)
    assert np.all((q0 >= chain.position_min) & (q0 <= chain.position_max))


def test_a_joint_no_pose_can_hold_keeps_its_start_off_its_stops():
    """The equality bench's random tree: trunk_joint1, a prismatic joint, carries 104.7 N of
    gravity against its 80 N limit wherever it is (a joint's own value does not move the load
    on a prismatic axis: g(q) here is the same at every sample). The search then found every
    value equally bad and took the first, the joint's lower stop, where the stop's push read
    as a 20 N collision 10 ms in; it now searches START_ROOM inside both stops, as zero_pose.
    """
    from examples import random_tree_urdf

    from dyn_control import gravity_torques, load_chain
    from dyn_control.poses import START_ROOM, default_initial_positions
    chain = load_chain(random_tree_urdf(3), tip_links=["tool1", "tool2", "tool3"])
    i = chain.joint_names.index("trunk_joint1")
    q0 = default_initial_positions(chain)
    lifted = q0.copy()
    lifted[i] = 1.0
    assert abs(gravity_torques(chain, q0)[i]) > chain.effort_limits[i]
    assert gravity_torques(chain, lifted)[i] == pytest.approx(gravity_torques(chain, q0)[i],
                                                              abs=1e-9)
    room = START_ROOM * (chain.position_max[i] - chain.position_min[i])
    assert chain.position_min[i] + room <= q0[i] <= chain.position_max[i] - room


REAL = {"ur5": ("ur_description/urdf/ur5_robot.urdf", []),
        "panda": ("panda_description/urdf/panda.urdf", ["--tip", "panda_hand"]),
        "xarm7": ("xarm_description/urdf/xarm7.urdf", []),
        "baxter": ("baxter_description/urdf/baxter.urdf", ["--tip", "left_gripper_base_link"])}


@pytest.mark.parametrize("name", REAL)
def test_inspect_on_real_arms_prints_the_chain_load_chain_builds(name):
    """On example-robot-data's own files, what inspect prints is the chain load_chain builds
    (the reference): each joint's row, its lumped mass to 4 figures and its limits, the lumped
    links, the locked fingers (the Panda's), and findings none, exit 0 (the nodes run all
    four); the xArm7's stiff damping and Baxter's zero pose come as warnings.
    """
    from conftest import robots_dir

    from dyn_control import load_chain
    rel, flags = REAL[name]
    path = robots_dir() / rel
    out = run(path, *flags)
    assert out.returncode == 0, out.stderr
    chain = load_chain(path, tip_link=flags[1] if flags else None)
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()
            if line.split() and line.split()[0] in chain.joint_names}
    assert list(rows) == list(chain.joint_names)
    for info, mass in zip(chain.joints, chain.mass):
        row = rows[info.name]
        assert float(row[6]) == pytest.approx(mass, rel=5e-4)
        for value, limit in zip(row[10:14], (info.lower, info.upper, info.effort,
                                             info.velocity)):
            assert value == "-" if not np.isfinite(limit) else float(value) == pytest.approx(
                limit, rel=5e-4)
    for joint_name, links in zip(chain.joint_names, chain.lumped_links):
        assert f"  {joint_name}: {', '.join(links)}" in out.stdout
    assert "findings: none" in out.stdout
    if chain.locked_joints:
        assert ("locked at their zero position and lumped: " + ", ".join(chain.locked_joints)
                in out.stdout)
    warned = "warnings (the nodes run it):" in out.stdout
    assert warned == (name in ("xarm7", "baxter"))
