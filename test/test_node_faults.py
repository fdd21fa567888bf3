"""The nodes under bad input, in-process with real rclpy: stale and bad states, the rate
limit, bad parameters and URDFs stop a node with one line, non-finite efforts are never
sent; and trajectory_demo's waiting.

References: the pure functions the nodes wrap (the core's law on arrays, Trajectory), closed
forms for interpolation, to 1e-9.
"""

import os
import subprocess

import numpy as np
import pytest
from conftest import URDF_DIR

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from node_fixtures import (  # noqa: E402
    ARM,
    NAMES,
    Captured,
    Q,
    config_overrides,
    go_stale,
    make_controller,
    ros_domain,
    state_msg,
    wait_until,
)
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from dyn_control.nodes import messages  # noqa: E402
from dyn_control.nodes.trajectory_demo import CONTROLLER, TrajectoryDemo  # noqa: E402
from harness.processes import executable, ros_args  # noqa: E402

DOMAIN = 147  # and DOMAIN + 1 for the processes a test starts
ros = ros_domain(DOMAIN)


def test_trajectory_demo_says_on_diagnostics_what_it_waits_for():
    """Started alone, it reports what it waits for (the controller's action server; once that
    is there, a joint state naming the arm's joints), on /diagnostics' status values.
    """
    demo = TrajectoryDemo(parameter_overrides=[
        *config_overrides("demo", "trajectory_demo"), Parameter("urdf_file", value=ARM)])
    try:
        demo.say_waiting()
        assert demo.report == ("waiting", {"waiting_for": f"{CONTROLLER}'s "
                                                          "follow_joint_trajectory action server"})
        demo.state_sub = object()  # the controller was ready: now the state is awaited
        demo.say_waiting()
        assert demo.report[1]["waiting_for"] == ("a joint state on /joint_states naming "
                                                 + ", ".join(NAMES))
    finally:
        demo.state_sub = None
        demo.destroy_node()


def test_trajectory_demo_centres_on_a_state_taken_once_the_controller_is_ready():
    """States from before the controller is ready are not taken (an arm nobody holds sags);
    after it, the first state is the centre, and the one trajectory goes out at once.
    Reference: sine_waypoints' fade-out ends at rest on its centre, so the last point is the
    state, to 1e-12.
    """
    demo = TrajectoryDemo(parameter_overrides=[
        *config_overrides("demo", "trajectory_demo"), Parameter("urdf_file", value=ARM),
        Parameter("interface", value="topic")])
    sent = Captured(demo.pub)
    listener = rclpy.create_node("controller_stand_in")
    try:
        demo.on_poll()
        assert demo.state_sub is None, "listening for states before the controller is ready"
        listener.create_subscription(JointTrajectory, f"{CONTROLLER}/joint_trajectory",
                                     lambda m: None, 10)
        wait_until(lambda: demo.pub.get_subscription_count() > 0, 10)
        demo.on_poll()
        assert demo.state_sub is not None
        q = Q + 0.05
        demo.on_state(state_msg(1.0, NAMES, q))
        demo.on_state(state_msg(1.001, NAMES, Q))
        assert len(sent.messages) == 1
        np.testing.assert_allclose(sent.messages[0].points[-1].positions, q, atol=1e-12)
        demo.on_poll()
        assert len(sent.messages) == 1
    finally:
        listener.destroy_node()
        demo.destroy_node()


@pytest.mark.parametrize("params, named", [
    ({"urdf_file": "/nonexistent/arm.urdf"}, "/nonexistent/arm.urdf"),
    ({"urdf_file": ARM, "joints": ["joint1", "wrist"]}, "'wrist'"),
    ({"urdf_file": ARM, "kp": -5.0}, "kp must be finite and >= 0"),
    ({"urdf_file": ARM, "mode": "turbo"}, "'turbo'"),
    ({"urdf_file": ARM, "payload_link": "nope"}, "payload_link 'nope'"),
])
def test_bad_configuration_stops_the_node_with_one_line(params, named):
    res = subprocess.run([executable("computed_torque_controller"), *ros_args(params=params)],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    assert res.returncode == 1
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert len(lines) == 1 and named in lines[0], res.stderr
    assert "Traceback" not in res.stderr


def test_a_state_before_the_first_clock_is_not_read_as_a_stale_spell():
    # use_sim_time with no /clock yet: the node's time reads 0 while the simulator, braked as
    # the controller started, is already at 0.26 s. The state is seen at its stamp, and a
    # watchdog tick without a clock does nothing (it once counted a stale event here).
    node, effort, *_ = make_controller(use_sim_time=True)
    try:
        assert node.get_clock().now().nanoseconds == 0
        node.on_joint_state(state_msg(0.26, NAMES, Q))
        node.on_watchdog()
        assert node.core.watchdog.last_seen == 0.26
        assert node.core.watchdog.events == 0 and not node.core.watchdog.stale
        assert len(effort.messages) == 1  # the state was answered
    finally:
        node.destroy_node()


def test_state_timeout_holds_gravity_compensation_then_recovers_without_a_jump():
    from dyn_control import gravity_torques
    node, effort, *_ = make_controller()
    try:
        go_stale(node, Q)
        assert node.core.watchdog.stale
        np.testing.assert_allclose(effort.messages[-1].data, gravity_torques(node.chain, Q),
                                   atol=1e-12)
        sent = len(effort.messages)
        # keeps holding
        node.on_watchdog(node.core.watchdog.last_seen + node.core.watchdog.timeout + 0.06)
        assert len(effort.messages) == sent + 1
        held = np.array(effort.messages[-1].data)
        node.on_joint_state(state_msg(1.5, NAMES, Q))  # states are back, arm where it was
        assert not node.core.watchdog.stale
        # the first command after recovery equals the holding torque (at rest): no jump
        np.testing.assert_allclose(effort.messages[-1].data, held, atol=1e-9)
        np.testing.assert_allclose(node.core.goals.trajectory.sample(10.0)[0],
                                   Q)  # holds where it is
    finally:
        node.destroy_node()


def test_state_timeout_stop_publishes_nothing():
    node, effort, *_ = make_controller(on_state_timeout="stop")
    try:
        go_stale(node, Q)
        sent = len(effort.messages)
        node.on_watchdog(node.core.watchdog.last_seen + node.core.watchdog.timeout + 0.06)
        assert node.core.watchdog.stale and len(effort.messages) == sent
    finally:
        node.destroy_node()


def test_bad_states_keep_the_last_command_at_most_state_timeout():
    node, effort, *_ = make_controller(on_state_timeout="stop")
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        node.on_joint_state(state_msg(1.001, NAMES, Q * np.nan))  # bad: does not refresh
        node.on_watchdog(node.core.watchdog.last_seen + 0.2)
        assert node.core.watchdog.stale  # the bad state did not count as a state
    finally:
        node.destroy_node()


def test_max_effort_rate_bounds_the_step_between_commands():
    node, effort, *_ = make_controller(max_effort_rate=100.0)  # N m/s: 0.1 N m per ms
    try:
        node.on_joint_state(state_msg(1.000, NAMES, Q))
        first = np.array(effort.messages[-1].data)
        node.on_joint_state(state_msg(1.001, NAMES, Q + 0.2))  # asks for a big change
        step = np.array(effort.messages[-1].data) - first
        assert np.abs(step).max() == pytest.approx(0.1, rel=1e-9)
    finally:
        node.destroy_node()


@pytest.mark.parametrize("params, named", [
    ({"urdf_file": ARM, "rate": "abc"}, "rate must be a finite number, got 'abc' (a string)"),
    ({"urdf_file": ARM, "state_timeout": 0.0}, "state_timeout"),
    ({"urdf_file": ARM, "on_state_timeout": "panic"}, "'panic'"),
    ({"urdf_file": ARM, "qos_reliability": "sometimes"}, "'sometimes'"),
])
def test_bad_typed_or_ranged_parameters_stop_the_node_with_one_line(params, named):
    res = subprocess.run([executable("computed_torque_controller"), *ros_args(params=params)],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1 and named in lines[0], res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("node", ["dynamics_simulator", "computed_torque_controller"])
def test_a_moving_link_without_inertial_stops_each_node_with_one_line_naming_it(node, tmp_path):
    """The seeds' 2R arm with link2's <inertial> taken out: M is singular. Each node stops with
    exit 1 and one line naming the joint and the link (the simulator took the file and blew up
    3880 times in 5 s; the controller said "mass matrix is not positive definite").
    """
    text = (URDF_DIR / "two_link.urdf").read_text()
    start = text.index('<link name="link2"')
    body = text[start:text.index("</link>", start)]
    cut = body[:body.index("<inertial>")] + body[body.index("</inertial>") + len("</inertial>"):]
    arm = tmp_path / "no_inertial.urdf"
    arm.write_text(text.replace(body, cut))
    res = subprocess.run([executable(node), *ros_args(params={"urdf_file": str(arm)})],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "joint 'joint2' moves no mass: its link 'link2'" in lines[0]


def test_cartesian_demo_refuses_a_push_force_that_is_not_three_values():
    res = subprocess.run([executable("cartesian_demo"),
                          *ros_args(params={"push_force": [1.0]})],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert "push_force must be 3 finite values (N, base axes), got [1.0]" in lines[0]
    assert "Traceback" not in res.stderr


def test_message_writers_refill_one_message_in_place():
    # the per-tick writers hand out the same message each time, with the new values in it
    writer = messages.JointStateWriter(NAMES[:2], ("position", "velocity"))
    first = writer.fill(1.25, [1.0, 2.0], [3.0, 4.0])
    second = writer.fill(2.5, [5.0, 6.0], [7.0, 8.0])
    assert first is second and list(second.position) == [5.0, 6.0] and len(second.effort) == 0
    assert messages.to_seconds(second.header.stamp) == 2.5 and list(second.velocity) == [7.0, 8.0]
    # the effort command goes out as bytes: rclpy's own serialization of the message, without
    # its trailing padding (the size the middleware sends, which rosbags holds to); padding is
    # whatever memory held, so the bytes are compared as rclpy and rosbags read them
    from dyn_control.recording import typestore
    effort = messages.EffortWriter(np.array([2, 0, 1]))  # command order: chain joints 2, 0, 1
    assert effort.raw

    def read(sent, data):
        assert len(sent) <= len(serialize_message(Float64MultiArray(data=list(data))))
        bagged = typestore().deserialize_cdr(sent, "std_msgs/msg/Float64MultiArray")
        got = np.asarray(deserialize_message(sent, Float64MultiArray).data)
        assert np.asarray(bagged.data).tobytes() == got.tobytes()
        return got

    for tau in ([10.0, 20.0, 30.0], [-0.0, np.inf, np.nan], [1e-310, -7.25, 1e300]):
        data = [tau[2], tau[0], tau[1]]
        got = read(effort.fill(np.array(tau)), data)
        assert got.tobytes() == np.array(data).tobytes()
    kept = effort.fill(np.array([1.0, 2.0, 3.0]))
    effort.fill(np.array([4.0, 5.0, 6.0]))  # a sent command is not refilled afterwards
    assert list(read(kept, [0.0] * 3)) == [3.0, 1.0, 2.0]
    for m in (0, 1, 2, 64):  # the values' place found for any size
        writer = messages.EffortWriter(np.arange(m))
        values = np.linspace(-1.0, 1.0, m)
        assert writer.raw and read(writer.fill(values), values).tobytes() == values.tobytes()
    # a JointState as bytes (the controller's ~/reference and ~/error, the simulator's joint
    # states): what rclpy reads from them is the message the writer would have filled
    store = typestore()
    names_sets = (NAMES, [], ["a"], ["gelenk_ä", "关节2", "x" * 37], [f"j{i}" for i in range(40)])
    rng = np.random.default_rng(3)
    for names in names_sets:
        for fields in (("position", "velocity", "effort"), ("effort",), ("position", "velocity")):
            raw = messages.JointStateWriter(names, fields, raw=True)
            plain = messages.JointStateWriter(names, fields)
            assert raw.raw is not None
            for t in (0.0, 1.25, 1796595260.047160315, 12.999999999999):
                values = [rng.normal(size=len(names)) for _ in fields]
                sent = raw.fill(t, *values)
                got = deserialize_message(sent, JointState)
                want = plain.fill(t, *values)
                # the exact size, as the middleware sends it: rosbags (rosbag2) refuses others
                bagged = store.deserialize_cdr(sent, "sensor_msgs/msg/JointState")
                assert list(bagged.name) == list(names)
                assert list(got.name) == list(want.name) == list(names)
                assert (got.header.stamp.sec, got.header.stamp.nanosec) == (
                    want.header.stamp.sec, want.header.stamp.nanosec)
                for field in ("position", "velocity", "effort"):
                    assert np.asarray(getattr(got, field)).tobytes() == np.asarray(
                        getattr(want, field)).tobytes()
    # what the core checks before a command goes out
    from dyn_control.controller.laws import all_finite
    assert all_finite(np.array([10.0, 20.0, 30.0]))
    assert all_finite(np.array([1e308, 1e308, 0.0]))  # finite, though the quick sum overflows
    assert not all_finite(np.array([0.0, np.nan, 0.0]))


def test_a_non_finite_effort_is_never_sent():
    # velocities of 1e200 rad/s are finite, but the Coriolis terms overflow to inf - inf = NaN;
    # saturation does not help (clip keeps NaN), so the command must be refused before the wire
    node, effort, reference, _ = make_controller()
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        sent = len(effort.messages)
        node.on_joint_state(state_msg(1.001, NAMES, Q, np.full(7, 1e200)))
        assert len(effort.messages) == sent  # refused
        assert all(np.all(np.isfinite(m.data)) for m in effort.messages)
        assert all(np.all(np.isfinite(m.effort)) for m in reference.messages)
    finally:
        node.destroy_node()

