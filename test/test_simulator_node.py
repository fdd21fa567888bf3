"""dynamics_simulator in-process, with real rclpy over DDS: synchronous stepping, its
diagnostics' stamps, bad configuration, payload and pushes at run time, and the peer of
ros2_control's topic-based hardware.

References: the pure functions the nodes wrap (the core's law on arrays, Trajectory), closed
forms for interpolation, to 1e-9.
"""

import os
import subprocess
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from node_fixtures import (  # noqa: E402
    ARM,
    NAMES,
    Captured,
    config_overrides,
    ros_domain,
    wait_until,
)
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from dyn_control.nodes import messages  # noqa: E402
from dyn_control.nodes.simulator import DynamicsSimulator  # noqa: E402
from dyn_control.poses import default_initial_positions  # noqa: E402
from harness.processes import executable, ros_args  # noqa: E402

DOMAIN = 145  # and DOMAIN + 1 for the processes a test starts
ros = ros_domain(DOMAIN)


def test_simulator_synchronous_steps_only_on_an_answer_and_drops_bad_commands():
    # synchronous, as fast as possible, a sync_timeout longer than the test: only answers step
    # (that an unanswered state waits is the next test's, on the clock). No sleep shows that
    # nothing happened: each step is awaited, and what it applied tells which command made it.
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("real_time_factor", value=0.0),
        Parameter("sync_timeout", value=300.0)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    states = Captured(node.state_pubs[0][0])
    try:
        assert node.core.settings.synchronous
        np.testing.assert_array_equal(node.core.sim.q,
                                      default_initial_positions(node.core.sim.chain))
        tau = np.linspace(-1, 1, 7)
        node.on_command(Float64MultiArray(data=tau.tolist()))
        wait_until(lambda: states.messages, 5.0)
        assert node.core.sim.steps == 1 and states.messages[-1].header.stamp.nanosec == 1_000_000
        np.testing.assert_allclose(states.messages[-1].effort, tau)
        for bad in ([1.0] * 6, [np.nan] * 7):  # dropped: neither answers the state
            node.on_command(Float64MultiArray(data=bad))
        node.on_command(Float64MultiArray(data=(2 * tau).tolist()))
        wait_until(lambda: len(states.messages) >= 2, 5.0)
        # the second step is the good answer's: had a bad command stepped, this state would
        # carry tau (the effort held) or a third state would follow with nothing to answer it
        np.testing.assert_allclose(states.messages[1].effort, 2 * tau)
        assert node.core.sim.steps == 2 and len(states.messages) == 2 and node.core.missed == 0
    finally:
        node.shutdown()
        node.destroy_node()


def test_simulator_synchronous_steps_on_after_sync_timeout_and_counts_a_miss():
    # as fast as possible, but never ahead of a silent controller: one step per sync_timeout
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("real_time_factor", value=0.0),
        Parameter("sync_timeout", value=0.05)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    try:
        node.on_command(Float64MultiArray(data=[0.0] * 7))  # answers the state it sees now
        wait_until(lambda: node.core.missed >= 1, 5.0)  # then nobody answers: a miss after 0.05 s
        start, steps = time.monotonic(), node.core.sim.steps
        wait_until(lambda: node.core.sim.steps >= steps + 10, 5.0)  # time runs on
        elapsed, stepped = time.monotonic() - start, node.core.sim.steps - steps
        assert stepped <= elapsed / 0.05 + 2  # at one step per sync_timeout, no faster
        assert node.core.missed >= stepped - 1
    finally:
        node.shutdown()
        node.destroy_node()


def test_simulator_steps_on_when_the_middleware_refuses_a_state():
    # Fast DDS refused a write on a starved machine ("Failed to publish: cannot publish data",
    # beside the suite and a CPU hog): the stepping thread died of it, and simulated time
    # stopped. The refusal stands in here as rclpy raises it, for the first three states.
    from rclpy._rclpy_pybind11 import RCLError
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("real_time_factor", value=0.0),
        Parameter("synchronous", value=False), Parameter("wait_for_command", value=False)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    publisher, sent = node.state_pubs[0][0], []

    def publish(msg):
        if len(sent) < 3:
            sent.append(None)
            raise RCLError("Failed to publish: cannot publish data")
        sent.append(msg)
    publisher.publish = publish
    try:
        wait_until(lambda: len(sent) > 50, 10.0)  # the states after the refused ones go out
        assert node.stepper.thread.is_alive() and node.stepper.failed == 3
        assert node.status()[2]["publish_failures"] == 3
    finally:
        node.shutdown()
        node.destroy_node()


def test_simulator_diagnostics_are_stamped_with_its_simulated_time():
    # as its joint states are (the clock the other nodes run on), not the wall clock's 1.7e9 s
    from diagnostic_msgs.msg import DiagnosticArray
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("real_time_factor", value=0.0),
        Parameter("sync_timeout", value=0.01)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    peer = rclpy.create_node("diagnostics_peer")
    stamps = []  # of the simulator's /diagnostics

    def on_diagnostics(msg):
        if any(status.name == "dynamics_simulator" for status in msg.status):
            stamps.append(messages.to_seconds(msg.header.stamp))

    peer.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(peer)
    try:
        deadline = time.monotonic() + 30
        while not stamps and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert stamps, "no /diagnostics from the simulator"
        # (to the nanosecond of a stamp)
        assert 0.0 <= stamps[-1] <= node.core.sim.t + 1e-9, (stamps[-1], node.core.sim.t)
    finally:
        executor.shutdown()
        peer.destroy_node()
        node.shutdown()
        node.destroy_node()


@pytest.mark.parametrize("params, named", [
    ({"initial_positions": [0.0, 1.0]}, "initial_positions"),
    ({"initial_positions": 0.5}, "initial_positions"),
    ({"effort_limits": "abc"}, "effort_limits must be a finite number or a list of them"),
    ({"dt": -1.0}, "dt"),
    ({"payload_mass": -1.0}, "payload_mass"),
    ({"initial_positions": [0.0, 0.6, 0.0, 9.0, 0.0, 0.8, 0.0]},
     "initial_positions: joint 'joint4' at 9 is outside its limits"),
    ({"publish_rate": 2000.0}, "publish_rate 2000 Hz is above 1/dt = 1000 Hz"),
])
def test_simulator_bad_configuration_stops_with_one_line(params, named):
    res = subprocess.run([executable("dynamics_simulator"),
                          *ros_args(params={"urdf_file": ARM, **params})],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1 and named in lines[0], res.stderr
    assert "Traceback" not in res.stderr


def test_simulator_payload_at_run_time_and_a_bad_one_is_refused():
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("payload_mass", value=1.5)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    try:
        assert node.core.sim.chain.mass.sum() == pytest.approx(node.core.chain.mass.sum() + 1.5)
        result = node.set_parameters([Parameter("payload_mass", value=-2.0)])[0]
        assert not result.successful and "payload_mass must be finite and >= 0" in result.reason
        assert node.core.sim.chain.mass.sum() == pytest.approx(node.core.chain.mass.sum() + 1.5)
        assert node.set_parameters([Parameter("payload_mass", value=0.5)])[0].successful
        assert node.core.sim.chain.mass.sum() == pytest.approx(node.core.chain.mass.sum() + 0.5)
    finally:
        node.shutdown()
        node.destroy_node()


def test_simulator_pushes_and_drops_bad_ones():
    from geometry_msgs.msg import WrenchStamped
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("synchronous", value=False)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    try:
        msg = WrenchStamped()
        msg.header.frame_id = "link4"
        msg.wrench.force.z = -5.0
        node.on_external_wrench(msg)
        link, wrench = node.core.sim.external
        assert link == "link4" and wrench[2] == -5.0
        for frame, value in (("elbow", 1.0), ("", float("nan"))):
            bad = WrenchStamped()
            bad.header.frame_id = frame
            bad.wrench.torque.x = value
            node.on_external_wrench(bad)
            assert node.core.sim.external[0] == "link4"  # dropped: the push goes on
        node.on_external_wrench(WrenchStamped())  # zero: the push ends
        assert node.core.sim.external is None
    finally:
        node.shutdown()
        node.destroy_node()


def test_simulator_as_the_topic_based_hardware_peer_takes_efforts_by_name_and_drops_bad_ones():
    # command_type joint_state: what JointStateTopicSystem's write() publishes (every joint by
    # name, effort only) drives the arm; states go out on /robot_joint_states with position,
    # velocity and effort; an unknown or missing joint, compacted efforts or a NaN (what the
    # plugin sends before any controller has written) are dropped and the last good command stays
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("command_type", value="joint_state"),
        Parameter("synchronous", value=False)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    states = Captured(node.state_pubs[0][0])
    try:
        assert node.state_pubs[0][0].topic_name == "/robot_joint_states"
        shuffled = list(reversed(NAMES))
        good = JointState(name=shuffled, effort=[float(k) for k in range(7)])
        node.on_joint_command(good)
        np.testing.assert_array_equal(node.core.command, list(reversed(range(7))))  # by name
        for bad in (JointState(name=NAMES + ["gripper"], effort=[0.0] * 8),
                    JointState(name=NAMES[:6], effort=[0.0] * 6),
                    JointState(name=NAMES, effort=[0.0] * 6),
                    JointState(name=NAMES, effort=[float("nan")] * 7)):
            node.on_joint_command(bad)
            np.testing.assert_array_equal(node.core.command, list(reversed(range(7))))
        wait_until(lambda: states.messages, 5.0)
        last = states.messages[-1]
        assert list(last.name) == NAMES
        assert len(last.position) == len(last.velocity) == len(last.effort) == 7
    finally:
        node.shutdown()
        node.destroy_node()
    for reason, message in (("joint command names unknown joint 'gripper'",
                             JointState(name=NAMES + ["gripper"], effort=[0.0] * 8)),
                            ("joint command lacks joint 'joint7'", JointState(name=NAMES[:6],
                                                                              effort=[0.0] * 6)),
                            ("6 efforts for 7 joints", JointState(name=NAMES, effort=[0.0] * 6)),
                            ("non-finite effort for joint 'joint1'",
                             JointState(name=NAMES, effort=[float("nan")] * 7))):
        with pytest.raises(messages.BadMessage, match=reason):
            messages.read_joint_command(message, NAMES)


def test_the_topic_based_peer_mode_refuses_lockstep_with_one_line():
    res = subprocess.run([executable("dynamics_simulator"), *ros_args(params={
        "urdf_file": ARM, "command_type": "joint_state", "synchronous": True})],
        capture_output=True, text=True, timeout=60, env={**os.environ,
                                                         "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert "synchronous must be false with command_type joint_state" in lines[0]


def test_default_initial_positions_use_the_limits_midpoint_when_zero_is_outside():
    from conftest import robots_dir

    from dyn_control import load_chain
    chain = load_chain(robots_dir() / "panda_description/urdf/panda.urdf", tip_link="panda_hand")
    q0 = default_initial_positions(chain)
    assert chain.upper[3] < 0  # panda_joint4's range excludes zero
    assert q0[3] == pytest.approx(0.5 * (chain.lower[3] + chain.upper[3]))
    assert q0[0] == 0.0

