"""A URDF's limits are checked, not trusted (issue 60). Swapped, missing, zero and non-finite
position, velocity and effort limits: load_chain finds them (chain.limit_findings), describe
lists them and exits 1, make demo refuses the arm in one line, and both nodes stop at start-up
with one line naming the joint and the value, unless `unlimited_joints` names the joint: then
it runs without the limits its URDF does not give. Before, each switched the limits off in
silence: make demo drove the swapped joint through [-0.40, 0.43] rad, outside the declared
[-1, 1] it meant, and called the goal SUCCESSFUL.

The real files: of every arm of example-robot-data, only the double pendulums' joints are found
(a SolidWorks exporter's 0 for "not specified" on all four limits), the reference for what
the check finds on files nobody here wrote.
"""

import os
import re
import subprocess
import warnings

import numpy as np
import pytest
from arm_sweep import CHOSEN, real_arms
from conftest import DEFAULT_ARM, URDF_DIR, robots_dir

from dyn_control import describe, load_chain
from dyn_control.model.chain import refused_limits
from harness.demo import check_arm
from harness.processes import executable, ros_args

DOMAIN = 151  # the nodes' processes

TWO_LINK = (URDF_DIR / "two_link.urdf").read_text()
JOINT2 = re.findall(r"<limit[^>]*/>", TWO_LINK)[1]  # the seeds' 2R arm's second joint
BAD = {  # variant: (its <limit>, what the line names)
    "swapped": ('<limit lower="1.0" upper="-1.0" effort="30" velocity="6"/>',
                "joint 'joint2': lower 1 is above upper -1"),
    "missing": ("", "joint 'joint2' (revolute) has no <limit>"),
    "zero": ('<limit lower="-3" upper="3" effort="0" velocity="0"/>',
             "joint 'joint2': effort 0 is not a limit; velocity 0 is not a limit"),
    "no range": ('<limit lower="0" upper="0" effort="30" velocity="6"/>',
                 "joint 'joint2': lower = upper = 0, no range"),
    "not finite": ('<limit lower="-inf" upper="inf" effort="inf" velocity="6"/>',
                   "joint 'joint2': position limits -inf to inf are not finite; effort inf"),
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad_limits")
    files = {}
    for name, (limit, _) in BAD.items():
        files[name] = folder / f"two_link_{name.replace(' ', '_')}.urdf"
        files[name].write_text(TWO_LINK.replace(JOINT2, limit))
    return files


@pytest.mark.parametrize("variant", BAD)
def test_describe_lists_each_bad_limit_in_one_line_and_exits_1(bad_files, variant, capsys):
    assert describe.main([str(bad_files[variant])]) == 1
    found = [line for line in capsys.readouterr().out.splitlines() if "joint 'joint2'" in line]
    assert len(found) == 1 and BAD[variant][1] in found[0], found


@pytest.mark.parametrize("variant", BAD)
def test_make_demo_refuses_the_arm_in_one_line(bad_files, variant):
    line = check_arm(str(bad_files[variant]))
    assert line is not None and BAD[variant][1] in line and "unlimited_joints" in line
    assert "\n" not in line


def test_a_good_urdf_has_no_limit_findings():
    assert describe.main([str(DEFAULT_ARM)]) == 0
    assert load_chain(DEFAULT_ARM).limit_findings == ()


def test_on_every_arm_of_example_robot_data_only_the_double_pendulums_are_found():
    found = {}
    for rel, keywords in real_arms():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chain = load_chain(robots_dir() / rel, **keywords)
        if chain.limit_findings:
            found[rel] = [joint for joint, _ in chain.limit_findings]
    assert set(found) == {f"double_pendulum_description/urdf/double_pendulum{v}.urdf"
                          for v in ("", "_continuous", "_simple")}, found
    assert all(joints == ["joint1", "joint2"] for joints in found.values())
    assert not set(found) & set(CHOSEN)


def test_unlimited_joints_accepts_exactly_the_joints_it_names(bad_files):
    chain = load_chain(bad_files["swapped"])
    assert "joint2" in refused_limits(chain)
    assert refused_limits(chain, ["joint1"]) is not None
    assert refused_limits(chain, ["joint2"]) is None
    # what running it without means: no position limit on that joint, the other's kept
    assert np.isinf(chain.position_min[1]) and np.isfinite(chain.position_min[0])


def default_arm_swapped(folder):
    text = DEFAULT_ARM.read_text()
    limit = re.findall(r"<limit[^>]*/>", text)[1]
    path = folder / "default_arm_swapped.urdf"
    path.write_text(text.replace(limit, '<limit lower="1.0" upper="-1.0" effort="176.0" '
                                        'velocity="1.71"/>'))
    return path


def start(node, urdf, **params):
    return subprocess.run([executable(node), *ros_args(params={"urdf_file": str(urdf),
                                                               **params})],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ROS_DOMAIN_ID": str(DOMAIN)})


@pytest.mark.parametrize("node", ("dynamics_simulator", "computed_torque_controller"))
def test_each_node_stops_at_start_up_with_one_line_naming_the_joint(tmp_path, node):
    res = start(node, default_arm_swapped(tmp_path))
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert "joint 'joint2': lower 1 is above upper -1" in lines[0]
    assert "unlimited_joints" in lines[0]
    assert "Traceback" not in res.stderr


def test_named_in_unlimited_joints_the_controller_starts_without_that_limit(tmp_path):
    import rclpy
    from node_fixtures import make_controller

    rclpy.init(domain_id=DOMAIN)
    try:
        node, *_ = make_controller(urdf_file=str(default_arm_swapped(tmp_path)),
                                   unlimited_joints=["joint2"])
        try:
            guard = node.core.guard
            assert np.isinf(guard.lower[1]) and np.isinf(guard.upper[1])
            assert np.isfinite(guard.lower[0]) and node.core.settings.mode == "computed_torque"
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown()
