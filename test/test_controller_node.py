"""computed_torque_controller in-process, with real rclpy over DDS: its parameters, its
mapping of joint states, trajectories on the topic, run-time changes, bad messages, one round
trip through DDS end to end, the clock check, the integral and an infeasible trajectory.

References: the pure functions the nodes wrap (the core's law on arrays, Trajectory), closed
forms for interpolation, to 1e-9.
"""

import re
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from node_fixtures import (  # noqa: E402
    NAMES,
    Q,
    expected_command,
    make_controller,
    ros_domain,
    state_msg,
    trajectory_msg,
)
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from dyn_control.nodes.params import StartupError  # noqa: E402

DOMAIN = 61  # and DOMAIN + 1 for the processes a test starts
ros = ros_domain(DOMAIN)


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


def test_a_command_the_middleware_refuses_is_counted_and_the_node_keeps_going():
    # rclpy raises RCLError (a RuntimeError) when Fast DDS refuses a write, as the simulator's
    # joint states were refused on a starved machine; an exception out of a callback would end
    # the node. It stands in here for the first state's effort command.
    from rclpy._rclpy_pybind11 import RCLError
    node, effort, *_ = make_controller()
    captured = node.topics.effort_pub.publish

    def refuse(msg):
        raise RCLError("Failed to publish: cannot publish data")
    try:
        node.topics.effort_pub.publish = refuse
        node.on_joint_state(state_msg(1.0, NAMES, Q))
        assert node.status()[2]["publish_failures"] == 1 and not effort.messages
        node.topics.effort_pub.publish = captured
        node.on_joint_state(state_msg(1.001, NAMES, Q))  # the next tick's goes out
        assert len(effort.messages) == 1 and node.status()[2]["publish_failures"] == 1
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
    node, effort, reference, _ = make_controller()
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
        np.testing.assert_allclose(reference.messages[-1].position, Q, atol=1e-12)
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

