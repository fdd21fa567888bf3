"""The default arm's closed loop over DDS as the action tests drive it: the simulator and the
computed-torque controller as processes, and MoveIt-style FollowJointTrajectory goals.
Needs control_msgs (the stand-in that `make test` builds).
"""

import time

from control_msgs.action import FollowJointTrajectory
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.nodes import messages
from harness import processes

NAMES = [f"joint{i}" for i in range(1, 8)]


def wait(future, timeout):
    """The future's result, waited for up to `timeout` s (the executor spins elsewhere)."""
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, "timed out waiting for the action"
        time.sleep(0.01)
    return future.result()


def trajectory(points, names=NAMES, stamp=0.0):
    """JointTrajectory from (time s, positions) pairs, at rest at each point (quintic)."""
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = messages.to_stamp(stamp)
    zero = [0.0] * len(names)
    for t, q in points:
        msg.points.append(JointTrajectoryPoint(
            positions=[float(x) for x in q], velocities=zero, accelerations=zero,
            time_from_start=messages.to_duration(t)))
    return msg


def goal_to(q_target, duration=2.0, q_now=None, **fields):
    """A MoveIt-style goal: the first point the current position at 0 s, then the target."""
    points = ([(0.0, q_now)] if q_now is not None else []) + [(duration, q_target)]
    return FollowJointTrajectory.Goal(trajectory=trajectory(points), **fields)


def start_loop(log_dir, domain, controller_params=None):
    """The synchronous simulator and the controller (on simulated time) on the default arm, as
    processes on `domain`: -> [simulator, controller].
    """
    urdf, arm_configs = processes.arm_files("default_arm")
    env = processes.loop_env()
    return [processes.NodeProcess(
                "dynamics_simulator", [processes.config("simulator"), *arm_configs],
                {"urdf_file": str(urdf)}, log_dir=log_dir, env=env, domain_id=domain),
            processes.NodeProcess(
                "computed_torque_controller", [processes.config("controller")],
                {"urdf_file": str(urdf), "use_sim_time": True, **(controller_params or {})},
                log_dir=log_dir, env=env, domain_id=domain)]
