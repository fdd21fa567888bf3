"""The controller and simulator nodes in-process, with real rclpy over DDS (own domain id).

Most checks drive the node's callbacks with real messages and read what it publishes; one
round trip goes through DDS end to end. References: the pure functions the node wraps
(the core's law on arrays, Trajectory), closed forms for interpolation, to 1e-9.
"""

import copy
import os
import re
import subprocess
import time

import numpy as np
import pytest
import yaml
from conftest import CONFIG_DIR, URDF_DIR

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from dyn_control.nodes import messages  # noqa: E402
from dyn_control.nodes.controller import ComputedTorqueController  # noqa: E402
from dyn_control.nodes.params import StartupError  # noqa: E402
from dyn_control.nodes.simulator import DynamicsSimulator  # noqa: E402
from dyn_control.nodes.trajectory_demo import CONTROLLER, TrajectoryDemo  # noqa: E402
from dyn_control.poses import default_initial_positions  # noqa: E402
from harness.processes import executable, ros_args  # noqa: E402

DOMAIN = 61
ARM = str(URDF_DIR / "default_arm.urdf")
NAMES = [f"joint{i}" for i in range(1, 8)]
Q = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])


@pytest.fixture(scope="module", autouse=True)
def ros():
    rclpy.init(domain_id=DOMAIN)
    yield
    rclpy.shutdown()


def config_overrides(name, node):
    params = yaml.safe_load((CONFIG_DIR / f"{name}.yaml").read_text())[node]["ros__parameters"]
    return [Parameter(k, value=v) for k, v in params.items()]


class Captured:
    """Replaces a publisher's publish() to keep copies of what the node sends (a real publish
    serializes at once, so the node refills the same message objects tick after tick).
    """

    def __init__(self, publisher):
        self.messages = []
        publisher.publish = lambda msg: self.messages.append(copy.deepcopy(msg))


def make_controller(**params):
    """The controller node on the default arm, with params. The states these tests feed are
    made up (the arm does not follow the torques), which the external-torque observer rightly
    reads as a collision: it is off here (test_contact_loop runs it over DDS). These tests
    check the law's torques from the first state on, so the soft start and the rate limit are
    off unless a test sets them (test_limits.py checks them on the defaults).
    """
    params = {"external_torque.enabled": False, "max_effort_rate": 0.0, "soft_start": 0.0,
              **params}
    overrides = config_overrides("controller", "computed_torque_controller")
    overrides += [Parameter("urdf_file", value=ARM)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    node = ComputedTorqueController(parameter_overrides=overrides)
    topics = node.topics
    return (node, Captured(topics.effort_pub), Captured(topics.reference_pub),
            Captured(topics.error_pub))


def expected_command(node, t, q, qd):
    """Reference: the node's law on its trajectory at t, as a tick computes it (no tick)."""
    return node.core.law(q, qd, *node.core.goals.trajectory.sample(t))[0]


def state_msg(t, names, q, qd=None):
    return messages.joint_state(names, t, q, np.zeros(len(q)) if qd is None else qd)


def trajectory_msg(names, times, positions, velocities=None, accelerations=None, stamp=0.0):
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = messages.to_stamp(stamp)
    for k, t in enumerate(times):
        point = JointTrajectoryPoint(positions=list(map(float, positions[k])),
                                     time_from_start=messages.to_duration(t))
        if velocities is not None:
            point.velocities = list(map(float, velocities[k]))
        if accelerations is not None:
            point.accelerations = list(map(float, accelerations[k]))
        msg.points.append(point)
    return msg


def test_parameters_come_from_config_yaml():
    node, *_ = make_controller()
    try:
        assert node.core.settings.mode == "computed_torque"
        np.testing.assert_array_equal(node.core.law.kp, np.full(7, 400.0))
        np.testing.assert_array_equal(node.core.law.kd, np.full(7, 40.0))  # 2 sqrt(kp), critical
        np.testing.assert_array_equal(node.core.limits, [176, 176, 110, 110, 110, 40, 40])
        assert node.names == NAMES
    finally:
        node.destroy_node()


def test_joint_states_are_mapped_by_name_in_any_order():
    node, effort, reference, error = make_controller()
    try:
        rng = np.random.default_rng(0)
        q, qd = Q + rng.uniform(-0.1, 0.1, 7), rng.uniform(-0.5, 0.5, 7)
        node.on_joint_state(state_msg(1.0, NAMES, Q))  # first state: hold it
        expected = expected_command(node, 1.5, q, qd)
        for perm in (np.arange(7), rng.permutation(7), rng.permutation(7)):
            names = [NAMES[i] for i in perm] + ["gripper_finger"]
            node.on_joint_state(state_msg(1.5, names, np.append(q[perm], 0.3),
                                           np.append(qd[perm], 9.0)))
            np.testing.assert_allclose(effort.messages[-1].data, expected, atol=1e-9)
        assert reference.messages[-1].header.stamp.sec == 1 and len(error.messages) == 4
    finally:
        node.destroy_node()


def test_joints_parameter_sets_the_command_order():
    order = ["joint3", "joint1", "joint2", "joint7", "joint6", "joint5", "joint4"]
    node, effort, *_ = make_controller(joints=order)
    try:
        node.on_joint_state(state_msg(0.5, NAMES, Q))
        tau = node.core.output.command  # chain order
        np.testing.assert_allclose(effort.messages[-1].data,
                                   [tau[NAMES.index(j)] for j in order], atol=1e-12)
    finally:
        node.destroy_node()


@pytest.mark.parametrize("kind", ["linear", "cubic", "quintic"])
def test_trajectory_interpolation_at_known_times(kind):
    # (the point's velocity 0.1 rad/s is not an end at rest: allowed here)
    node, _, reference, _ = make_controller(allow_nonzero_velocity_at_trajectory_end=True)
    try:
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        goal = Q + 0.2
        vel = np.full((1, 7), 0.1) if kind != "linear" else None
        acc = np.full((1, 7), -0.3) if kind == "quintic" else None
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [goal], vel, acc))  # stamp 0: t = 2
        assert node.core.goals.trajectory.kind == kind

        def reference_at(t):
            node.on_joint_state(state_msg(t, NAMES, Q))
            ref = reference.messages[-1]
            return np.array(ref.position), np.array(ref.velocity)

        q, qd = reference_at(2.0)  # the start: the held position (at rest unless linear)
        np.testing.assert_allclose(q, Q, atol=1e-9)
        np.testing.assert_allclose(qd, 0.2 if kind == "linear" else 0.0, atol=1e-9)
        if kind == "linear":  # closed form: the straight line from the held start
            np.testing.assert_allclose(reference_at(2.5)[0], Q + 0.1, atol=1e-9)
        q, qd = reference_at(3.0 - 1e-6)  # just before the point: its position and velocity
        np.testing.assert_allclose(q, goal, atol=1e-6)
        np.testing.assert_allclose(qd, 0.1 if kind != "linear" else 0.2, atol=1e-5)
        q, qd = reference_at(4.0)  # after the last point: held, at rest
        np.testing.assert_allclose(q, goal, atol=1e-12)
        np.testing.assert_allclose(qd, 0.0, atol=1e-12)
    finally:
        node.destroy_node()


def test_new_trajectory_replaces_the_running_one_without_a_jump():
    # from the desired state (interpolate_from_desired_state), the reference continues as it was
    node, _, reference, _ = make_controller(interpolate_from_desired_state=True)
    try:
        node.on_joint_state(state_msg(0.0, NAMES, Q))
        node.on_trajectory(trajectory_msg(NAMES, [2.0], [Q + 0.5], [np.zeros(7)], [np.zeros(7)]))
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        before = np.array(reference.messages[-1].position)
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [Q - 0.5], [np.zeros(7)], [np.zeros(7)]))
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        np.testing.assert_allclose(reference.messages[-1].position, before, atol=1e-12)
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        np.testing.assert_allclose(reference.messages[-1].position, Q - 0.5, atol=1e-9)
    finally:
        node.destroy_node()


def test_trajectory_before_the_first_state_starts_with_it():
    node, _, reference, _ = make_controller()
    try:
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [Q + 0.1]))
        assert node.core.goals.trajectory is None
        node.on_joint_state(state_msg(5.0, NAMES, Q))  # starts now, from here
        assert node.core.goals.trajectory.kind == "linear"
        assert node.core.goals.trajectory.start_time == 5.0
        node.on_joint_state(state_msg(6.0, NAMES, Q))
        np.testing.assert_allclose(reference.messages[-1].position, Q + 0.1, atol=1e-12)
    finally:
        node.destroy_node()


def test_gains_and_mode_change_at_run_time_and_bad_values_are_refused():
    node, effort, *_ = make_controller()
    try:
        result = node.set_parameters([Parameter("kp", value=100.0)])[0]
        assert result.successful
        np.testing.assert_array_equal(node.core.law.kd, np.full(7,
                                                                # kd unset: follows 2 sqrt(kp)
                                                                20.0))
        assert node.set_parameters([Parameter("mode", value="gravity_pd")])[0].successful
        node.on_joint_state(state_msg(0.0, NAMES, Q))
        node.on_joint_state(state_msg(0.1, NAMES, Q - 0.01))
        g = expected_command(node, 0.1, Q - 0.01, np.zeros(7))
        np.testing.assert_allclose(effort.messages[-1].data, g, atol=1e-12)
        for name, value, reason in (("mode", "fast", "mode must be one of"),
                                    ("kp", -1.0, "kp must be finite and >= 0"),
                                    ("kd", [1.0, 2.0], "kd must be a scalar or 7 values"),
                                    ("effort_limits", [1.0, 2.0],
                                     "effort_limits must be a scalar or 7"),
                                    ("effort_limits", "abc",
                                     "effort_limits must be a finite number"),
                                    ("friction_deadband", 0.0, "friction_deadband must be > 0"),
                                    ("control_period", 2.0, "control_period must be in (0, 1]"),
                                    ("urdf_file", "/x.urdf", "cannot change while the node runs")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and reason in result.reason
        assert node.core.settings.mode == "gravity_pd" and node.core.law.kp[0] == 100.0
        assert node.set_parameters([Parameter("effort_limits", value=50.0)])[0].successful
        np.testing.assert_array_equal(node.core.limits, np.full(7, 50.0))  # a scalar: every joint
        assert node.set_parameters([Parameter("control_period", value=0.002)])[0].successful
        assert node.core.law.period == 0.002
        assert node.get_parameter("mode").value == "gravity_pd"
    finally:
        node.destroy_node()


NOT_NUMBERS = [(True, "got True (a boolean)"), ("abc", "got 'abc' (a string)"),
               (float("nan"), "got nan (float)"), (float("inf"), "got inf (float)")]


@pytest.mark.parametrize("name", ["kp", "ki", "effort_limits", "payload_mass", "integral_limit",
                                  "state_timeout"])
def test_a_number_parameter_refuses_a_boolean_a_string_and_a_non_finite_value(name):
    # at run time (ros2 param set): refused with the name, the value and its type, nothing changes
    node, *_ = make_controller()
    try:
        before = node.core.settings
        for value, said in NOT_NUMBERS:
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful
            assert result.reason.startswith(f"{name} must be a finite number")
            assert said in result.reason, result.reason
        assert node.core.settings is before
    finally:
        node.destroy_node()
    # at start-up (-p name:=value): the node stops with the same line
    for value, said in NOT_NUMBERS:
        with pytest.raises(StartupError,
                           match=f"parameter {name} must be a finite number.*{re.escape(said)}"):
            make_controller(**{name: value})


def test_a_number_list_as_the_parameter_service_delivers_it_is_taken():
    # over DDS a double array arrives as array.array, not a list (a test over DDS caught
    # payload_com refused that way): the round trip through the message, as the service does it
    node, *_ = make_controller()
    try:
        sent = [Parameter("payload_mass", value=1.5), Parameter("payload_com", value=[0.0, 0.0,
                                                                                      0.1])]
        received = [Parameter.from_parameter_msg(p.to_parameter_msg()) for p in sent]
        assert type(received[1].value).__name__ == "array"
        result = node.set_parameters_atomically(received)
        assert result.successful, result.reason
        np.testing.assert_array_equal(node.get_parameter("payload_com").value, [0.0, 0.0, 0.1])
    finally:
        node.destroy_node()


def test_bad_messages_are_dropped_and_the_node_keeps_going():
    node, effort, *_ = make_controller()
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        sent = len(effort.messages)
        nan_q = Q.copy()
        nan_q[3] = np.nan
        for bad in (state_msg(0.1, NAMES, nan_q), state_msg(0.1, NAMES[:-1], Q[:-1]),
                    JointState(name=NAMES, position=[0.0] * 6)):
            node.on_joint_state(bad)
        assert len(effort.messages) == sent
        running = node.core.goals.trajectory
        for bad in (trajectory_msg(["joint1", "elbow"], [1.0], [[0.0, 0.0]]),
                    trajectory_msg(NAMES, [1.0, 1.0], [Q, Q]),
                    trajectory_msg(NAMES, [1.0], [Q + 10.0])):
            node.on_trajectory(bad)
            assert node.core.goals.trajectory is running
        partial = trajectory_msg(["joint2"], [1.0], [[0.7]])
        node.on_trajectory(partial)  # refused by default (allow_partial_joints_goal), as JTC
        assert node.core.goals.trajectory is running
        assert node.set_parameters([Parameter("allow_partial_joints_goal",
                                              value=True)])[0].successful
        node.on_trajectory(partial)  # now accepted: the other joints hold
        assert node.core.goals.trajectory is not running
        np.testing.assert_allclose(node.core.goals.trajectory.sample(5.0)[0],
                                   np.where(np.arange(7) == 1, 0.7, Q))
    finally:
        node.destroy_node()


def test_round_trip_over_dds():
    """A state published on /joint_states comes back as the effort command the law gives."""
    node, *_ = make_controller()
    node.topics.effort_pub = node.create_publisher(Float64MultiArray, "/effort_controller/commands",
                                                   10)
    peer = rclpy.create_node("peer")
    got = []
    peer.create_subscription(Float64MultiArray, "/effort_controller/commands",
                             lambda m: got.append(np.array(m.data)), 10)
    states = peer.create_publisher(JointState, "/joint_states", 10)
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(peer)
    try:
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            states.publish(state_msg(3.0, NAMES, Q))
            executor.spin_once(timeout_sec=0.05)
            executor.spin_once(timeout_sec=0.05)
        assert got, "no effort command arrived over DDS"
        np.testing.assert_allclose(got[-1], expected_command(node, 3.0, Q, np.zeros(7)), atol=1e-9)
    finally:
        executor.shutdown()
        peer.destroy_node()
        node.destroy_node()


def test_simulator_synchronous_steps_only_on_an_answer_and_drops_bad_commands():
    # synchronous, as fast as possible, a sync_timeout longer than the test: only answers step
    # (that an unanswered state waits is the next test's, on the clock). No sleep shows that
    # nothing happened: each step is awaited, and what it applied tells which command made it.
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("real_time_factor", value=0.0),
        Parameter("sync_timeout", value=300.0)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    states = Captured(node.state_pub)
    try:
        assert node.core.settings["synchronous"]
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


def wait_until(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


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


def test_default_initial_positions_use_the_limits_midpoint_when_zero_is_outside():
    from conftest import robots_dir

    from dyn_control import load_chain
    chain = load_chain(robots_dir() / "panda_description/urdf/panda.urdf", tip_link="panda_hand")
    q0 = default_initial_positions(chain)
    assert chain.upper[3] < 0  # panda_joint4's range excludes zero
    assert q0[3] == pytest.approx(0.5 * (chain.lower[3] + chain.upper[3]))
    assert q0[0] == 0.0


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


# ------------------------------------------------------------------ faults (issue: safe under bad
# input)


def go_stale(node, q):
    """A good state, then silence longer than state_timeout, then one watchdog tick."""
    node.on_joint_state(state_msg(1.0, NAMES, q))
    node.on_watchdog(node.core.watchdog.last_seen + node.core.watchdog.timeout + 0.05)


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
    effort = messages.EffortWriter(np.array([2, 0, 1]))  # command order: chain joints 2, 0, 1
    assert list(effort.fill(np.array([10.0, 20.0, 30.0])).data) == [30.0, 10.0, 20.0]
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


def test_model_from_the_robot_description_topic():
    """No model parameter: the controller configures from /robot_description (latched, as
    robot_state_publisher publishes it), and a bad URDF there stops it through `fatal`.
    """
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    for text, ok in (((URDF_DIR / "default_arm.urdf").read_text(), True),
                     ("<robot name='x'><link name='a'/></robot>", False)):
        peer = rclpy.create_node("description_publisher")
        peer.create_publisher(String, "/robot_description", latched).publish(String(data=text))
        node = ComputedTorqueController()
        executor = rclpy.executors.SingleThreadedExecutor()
        executor.add_node(node)
        executor.add_node(peer)
        try:
            assert node.core is None
            deadline = time.monotonic() + 10
            while node.core is None and node.fatal is None and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            if ok:
                assert node.core is not None and node.names == NAMES
            else:
                assert node.core is None and "no movable joint" in str(node.fatal)
        finally:
            executor.shutdown()
            peer.destroy_node()
            node.destroy_node()


# ------------------------------------------------------------------ the model is wrong (payload,
# integral, check)


def test_payload_at_run_time_changes_the_model_and_a_bad_one_is_refused():
    from dyn_control import gravity_torques
    node, effort, *_ = make_controller()
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))  # at rest on target: tau = g(q)
        np.testing.assert_allclose(effort.messages[-1].data, gravity_torques(node.chain, Q),
                                   atol=1e-9)
        assert node.set_parameters([Parameter("payload_mass", value=2),  # an integer works too
                                    Parameter("payload_com", value=[0.0, 0.0, 0.1])])[0].successful
        node.on_joint_state(state_msg(1.001, NAMES, Q))
        # the next tick holds with the loaded model: reference, g(q) of with_payload (static)
        heavy = node.chain.with_payload(2.0, (0.0, 0.0, 0.1))
        np.testing.assert_allclose(effort.messages[-1].data, gravity_torques(heavy, Q), atol=1e-9)
        model = node.core.model
        for name, value, reason in (
                ("payload_mass", -1.0, "payload_mass must be finite and >= 0 kg, got -1.0"),
                ("payload_com", [0.0, float("nan"), 0.0],
                 "payload_com must be a finite number or a list of them, got [0.0, nan, 0.0] "
                 "(item 1: nan, float)"),
                ("payload_inertia", [0.01, 0.01, 0.05, 0.0, 0.0, 0.0], "triangle inequality"),
                ("payload_inertia", [0.01, 0.01, 0.01, 0.05, 0.0, 0.0],
                 "not positive semi-definite"),
                ("payload_link", "gripper",
                 "payload_link 'gripper' is not a link the chain moves")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and reason in result.reason, result.reason
            assert node.core.model is model  # the old payload stays
        assert node.set_parameters([Parameter("payload_mass", value=0.0)])[0].successful
        np.testing.assert_array_equal(node.core.model.mass, node.chain.mass)  # mass 0: no payload
    finally:
        node.destroy_node()


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


def test_integral_is_kept_across_trajectories_and_reset_when_ki_goes_to_zero():
    node, *_ = make_controller(ki=8000.0)
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))  # holds Q
        for k in range(1, 11):  # 10 ms 0.01 rad below target: the integral is e dt summed
            node.on_joint_state(state_msg(1.0 + 0.001 * k, NAMES, Q - 0.01))
        np.testing.assert_allclose(node.core.law.integral, 1e-4, rtol=1e-9)  # 0.01 rad x 10 ms
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [Q + 0.1]))
        assert node.set_parameters([Parameter("kp", value=300.0)])[0].successful  # law rebuilt
        np.testing.assert_allclose(node.core.law.integral, 1e-4, rtol=1e-9)  # kept by both
        assert node.set_parameters([Parameter("ki", value=0.0)])[0].successful
        np.testing.assert_array_equal(node.core.law.integral, 0.0)
        result = node.set_parameters([Parameter("integral_limit", value=-1.0)])[0]
        assert not result.successful and "integral_limit must be finite and >= 0" in result.reason
    finally:
        node.destroy_node()


def test_infeasible_trajectory_is_refused_naming_the_joint_and_the_arm_keeps_holding(capfd):
    node, effort, *_ = make_controller()
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        holding = node.core.goals.trajectory
        too_fast = Q + np.where(np.arange(7) == 1, 1.0, 0.0)  # joint2 by 1 rad in 0.2 s
        node.on_trajectory(trajectory_msg(NAMES, [0.2], [too_fast], [np.zeros(7)], [np.zeros(7)]))
        assert node.core.goals.trajectory is holding
        err = capfd.readouterr().err
        assert "trajectory refused: joint 'joint2' needs torque" in err, err
        assert "limit 176 N m" in err, err
        node.on_joint_state(state_msg(1.1, NAMES, Q))  # still holding Q
        np.testing.assert_allclose(node.topics.reference_msg.msg.position, Q, atol=1e-12)
        feasible = trajectory_msg(NAMES, [3.0], [too_fast], [np.zeros(7)], [np.zeros(7)])
        node.on_trajectory(feasible)
        assert node.core.goals.trajectory is not holding
        assert node.core.goals.trajectory.kind == "quintic"
        assert node.set_parameters([Parameter("trajectory_check", value="warn")])[0].successful
        running = node.core.goals.trajectory
        node.on_trajectory(trajectory_msg(NAMES, [0.2], [too_fast], [np.zeros(7)], [np.zeros(7)]))
        assert node.core.goals.trajectory is not running  # warn: accepted, and said
        assert "trajectory beyond the arm's limits: joint" in capfd.readouterr().err
        result = node.set_parameters([Parameter("trajectory_check", value="never")])[0]
        assert not result.successful and "'never'" in result.reason
    finally:
        node.destroy_node()


# ------------------------------------------------------------------ cartesian_impedance


def pose_msg(R, p, frame="", quaternion=None):
    from geometry_msgs.msg import PoseStamped

    from dyn_control.kinematics import matrix_quaternion
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = quaternion if quaternion is not None else matrix_quaternion(R)
    return msg


def test_cartesian_targets_are_taken_and_bad_ones_refused_naming_the_field(capfd):
    from geometry_msgs.msg import WrenchStamped

    from dyn_control import kinematics
    node, effort, *_ = make_controller(mode="cartesian_impedance")
    poses = Captured(node.topics.pose_pubs[0])
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))  # enters the mode: the target is here
        R, p = kinematics.frame_pose(node.chain, Q)
        np.testing.assert_allclose(node.core.target.task.target[1], p, atol=1e-12)
        assert poses.messages and poses.messages[-1].header.frame_id == "base_link"
        np.testing.assert_allclose([poses.messages[-1].pose.position.x,
                                    poses.messages[-1].pose.position.y,
                                    poses.messages[-1].pose.position.z], p, atol=1e-12)
        node.targets.on_pose(pose_msg(R, p + [0.02, 0.0, 0.0]))
        np.testing.assert_allclose(node.core.target.task.target[1], p + [0.02, 0.0, 0.0])
        good = node.core.target.task.target
        for bad, reason in ((pose_msg(R, [np.nan, 0, 0]), "target_pose position has a non-finite"),
                            (pose_msg(R, p, quaternion=(0, 0, 0, 0)),
                             r"not a unit quaternion \(norm 0\)"),
                            (pose_msg(R, p, quaternion=(0, 0, 0, 1.2)),
                             r"not a unit quaternion \(norm 1.2\)"),
                            (pose_msg(R, p, frame="world"),
                             "frame_id 'world' is not the chain's root link")):
            with pytest.raises(messages.BadMessage, match=reason):
                messages.read_pose(bad, "base_link")
            node.targets.on_pose(bad)  # (logged, throttled to one line a second)
            assert node.core.target.task.target is good  # the last good target stays
        assert "target_pose position has a non-finite" in capfd.readouterr().err
        wrench = WrenchStamped()
        wrench.wrench.force.x = 3.0
        node.targets.on_wrench(wrench)
        np.testing.assert_array_equal(node.core.target.task.wrench, [3.0, 0, 0, 0, 0, 0])
        node.targets.on_joint(JointState(name=["joint4"], position=[-1.0]))
        assert node.core.target.task.posture[3] == -1.0 and node.core.target.task.posture[0] == Q[0]
        node.targets.on_joint(JointState(name=["elbow"], position=[0.0]))
        assert "target_joint names unknown joint 'elbow'" in capfd.readouterr().err
        assert node.core.target.task.posture[3] == -1.0
        for name, value, reason in (("cartesian_stiffness", [-1.0] * 6,
                                     "cartesian_stiffness must be finite and >= 0"),
                                    ("cartesian_stiffness", [1.0] * 5,
                                     "cartesian_stiffness must be a scalar or 6"),
                                    ("ee_link", "nowhere",
                                     "ee_link 'nowhere' is not a link the chain moves"),
                                    ("max_pose_error", [0.1, 0.2, 0.3],
                                     "max_pose_error must be a scalar or 2"),
                                    ("target_filter", -1.0, "target_filter must be >= 0")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and reason in result.reason, result.reason
        # back to a joint mode: the targets are refused, the arm holds where it is
        assert node.set_parameters([Parameter("mode", value="computed_torque")])[0].successful
        with pytest.raises(ValueError, match="target_pose ignored: the controller is in "
                                             "computed_torque mode"):
            node.core.set_target_pose(R, p)
    finally:
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


@pytest.mark.parametrize("links, named", [({"ee_link": "gripper"}, "ee_link 'gripper'"),
                                          ({"ee_links": ["link7", "gripper"]},
                                           "ee_link 'gripper'")])
def test_a_cartesian_mode_with_an_unknown_ee_link_stops_the_node_with_one_line(links, named):
    res = subprocess.run([executable("computed_torque_controller"), *ros_args(params={
        "urdf_file": ARM, "mode": "cartesian_impedance", **links})],
        capture_output=True, text=True, timeout=60, env={**os.environ,
                                                         "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1 and named in lines[0], res.stderr


# ------------------------------------------------------------------ ros2_control's topic-based
# hardware


def test_simulator_as_the_topic_based_hardware_peer_takes_efforts_by_name_and_drops_bad_ones():
    # command_type joint_state: what JointStateTopicSystem's write() publishes (every joint by
    # name, effort only) drives the arm; states go out on /robot_joint_states with position,
    # velocity and effort; an unknown or missing joint, compacted efforts or a NaN (what the
    # plugin sends before any controller has written) are dropped and the last good command stays
    overrides = config_overrides("simulator", "dynamics_simulator") + [
        Parameter("urdf_file", value=ARM), Parameter("command_type", value="joint_state"),
        Parameter("synchronous", value=False)]
    node = DynamicsSimulator(parameter_overrides=overrides)
    states = Captured(node.state_pub)
    try:
        assert node.state_pub.topic_name == "/robot_joint_states"
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


def test_joint_states_on_another_clock_are_reported_once_and_trajectories_run_on_their_time():
    # a newcomer's loop: the simulator on simulated time, the controller on the wall clock
    node, effort, *_ = make_controller()  # use_sim_time false: the wall clock
    try:
        node.on_joint_state(state_msg(0.5, NAMES, Q))
        wall = time.time()
        assert node.clock.offset == pytest.approx(0.5 - wall, abs=5.0)
        _, _, values = node.status()
        assert values["clock_offset_s"] == pytest.approx(node.clock.offset, abs=1e-3)
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [Q + 0.05]))  # stamp 0: start now
        assert node.core.goals.started == pytest.approx((0.5,
                                                         1.5))  # the states' time, not the wall's
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        np.testing.assert_allclose(node.core.last.desired[0], Q + 0.025, atol=1e-12)  # it moves
    finally:
        node.destroy_node()


# ------------------------------------------------------------------ ~/markers (RViz)


def test_markers_show_the_walls_and_delete_them_with_the_limits_off():
    """~/markers' "walls": the box of limits.workspace_min/max as a cube centred in it with its
    size (1e-12 m), a side further out than WALL_SHOWN_M drawn there; deleted when the
    limits are off.
    """
    from visualization_msgs.msg import Marker

    from dyn_control.nodes.markers import WALL_SHOWN_M
    node, *_ = make_controller(**{"limits.workspace_min": [-0.4, -0.5, 0.1],
                                  "limits.workspace_max": [0.6, 0.5, 10.0]})
    markers = Captured(node.markers.pub)
    try:
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        node.markers.publish()
        wall = {m.ns: m for m in markers.messages[-1].markers}["walls"]
        assert wall.type == Marker.CUBE and wall.action == Marker.ADD
        assert wall.header.frame_id == "base_link" and 0 < wall.color.a < 1
        centre = [wall.pose.position.x, wall.pose.position.y, wall.pose.position.z]
        np.testing.assert_allclose(centre, [0.1, 0.0, (0.1 + WALL_SHOWN_M) / 2], atol=1e-12)
        np.testing.assert_allclose([wall.scale.x, wall.scale.y, wall.scale.z],
                                   [1.0, 1.0, WALL_SHOWN_M - 0.1], atol=1e-12)
        assert node.set_parameters([Parameter("limits.enabled", value=False)])[0].successful
        node.markers.publish()
        assert {m.ns: m for m in markers.messages[-1].markers}["walls"].action == Marker.DELETE
    finally:
        node.destroy_node()


def test_markers_show_the_desired_hand_path_the_target_pose_and_a_push():
    """~/markers: the desired path's points are the hand's forward kinematics along the
    trajectory (ends: the held start and the goal, 1e-9 m); in cartesian_impedance the target
    arrow sits at the target pose; an external wrench above PUSH_SHOWN_N is an arrow ending at
    the hand, 1 cm per N; what no longer applies is deleted.
    """
    from visualization_msgs.msg import Marker

    from dyn_control import kinematics
    from dyn_control.nodes.markers import METRES_PER_NEWTON
    node, *_ = make_controller()
    markers = Captured(node.markers.pub)
    try:
        # the topic the shipped RViz view shows
        from conftest import rviz_displays
        shown = rviz_displays()["rviz_default_plugins/MarkerArray"]["Topic"]["Value"]
        assert node.markers.pub.topic_name == shown
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [Q + 0.2]))
        node.markers.publish()
        by_ns = {m.ns: m for m in markers.messages[-1].markers}
        path = by_ns["desired_path"]
        assert path.type == Marker.LINE_STRIP and path.action == Marker.ADD
        assert path.header.frame_id == "base_link"
        ends = np.array([[p.x, p.y, p.z] for p in (path.points[0], path.points[-1])])
        for q, end in zip((Q, Q + 0.2), ends):
            np.testing.assert_allclose(end, kinematics.frame_pose(node.chain, q)[1], atol=1e-9)
        # joint mode, no observer
        assert by_ns["target"].action == by_ns["push"].action == Marker.DELETE
        assert node.set_parameters([Parameter("mode", value="cartesian_impedance")])[0].successful
        node.on_joint_state(state_msg(2.1, NAMES, Q))  # enters the mode: the target is here
        R, p = kinematics.frame_pose(node.chain, Q)
        node.targets.on_pose(pose_msg(R, p + [0.05, 0.0, 0.0]))
        node.markers.publish()
        target = {m.ns: m for m in markers.messages[-1].markers}["target"]
        assert target.type == Marker.ARROW and target.action == Marker.ADD
        np.testing.assert_allclose([target.pose.position.x, target.pose.position.y,
                                    target.pose.position.z], p + [0.05, 0.0, 0.0], atol=1e-12)
    finally:
        node.destroy_node()
    # no force levels: the marker computes the wrench from the residual (with them, the observe
    # stage has computed it that tick)
    node, *_ = make_controller(**{"external_torque.enabled": True, "collision.force_contact": 0.0,
                                  "collision.force_collision": 0.0})
    markers = Captured(node.markers.pub)
    try:
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        force = np.array([0.0, 10.0, -10.0])
        # the external torques of that force at the hand (J^T F: the observer's convention)
        node.core.contact.observer.felt[:] = kinematics.frame_jacobian(node.chain, Q)[:3].T @ force
        node.markers.publish()
        push = {m.ns: m for m in markers.messages[-1].markers}["push"]
        assert push.type == Marker.ARROW and push.action == Marker.ADD
        start, end = (np.array([q.x, q.y, q.z]) for q in push.points)
        hand = kinematics.frame_pose(node.chain, Q)[1]
        np.testing.assert_allclose(end, hand, atol=1e-9)
        np.testing.assert_allclose(end - start, METRES_PER_NEWTON * force, atol=1e-6)
    finally:
        node.destroy_node()
