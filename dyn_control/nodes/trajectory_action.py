"""~/follow_joint_trajectory (control_msgs/action/FollowJointTrajectory) and ~/controller_state
(control_msgs/msg/JointTrajectoryControllerState): how joint_trajectory_controller shows itself
to MoveIt and rqt, over the controller core's one goal path (GoalPort: offer, cancel,
feedback). Only conversions and bookkeeping live here; the rules are dyn_control.controller.goals.

control_msgs is optional at run time: where it does not import, `AVAILABLE` is False and the
controller runs without both (it says so in one line).

A goal the core refuses is accepted and then aborted at once with the refusal's code and reason,
so that the client learns why (JTC rejects such goals, and a rejected ROS 2 goal carries no
result). Results and feedback go out at action_monitor_rate on the steady clock, as JTC's.
"""

from typing import Callable, NamedTuple

from rclpy.action import ActionServer, CancelResponse
from rclpy.clock import Clock, ClockType

from dyn_control.controller import goals
from dyn_control.nodes import messages

try:
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTrajectoryControllerState
    AVAILABLE = True
except ImportError:
    FollowJointTrajectory = JointTrajectoryControllerState = None
    AVAILABLE = False

MISSING = ("control_msgs is not installed: ~/follow_joint_trajectory and ~/controller_state "
           "are off (the ~/joint_trajectory topic works as before)")


def request_from_goal(goal):
    """FollowJointTrajectory.Goal -> goals.Request; GoalRefused for multi-DOF joints, which
    the chain has none of.
    """
    if goal.multi_dof_trajectory.joint_names:
        raise goals.GoalRefused(goals.INVALID_JOINTS, "multi_dof_trajectory names joints "
                                f"{list(goal.multi_dof_trajectory.joint_names)}; the controller "
                                "has only single-DOF joints")
    return messages.trajectory_request(goal.trajectory, "action", goal.path_tolerance,
                                       goal.goal_tolerance,
                                       messages.to_seconds(goal.goal_time_tolerance))


class GoalPort(NamedTuple):
    """All the action server may do with the controller: offer a goal (goals.Request -> the
    core's Goal, whose outcome is the result), cancel one (-> whether it was running), and read
    an active one's feedback (ControllerCore.feedback).
    """

    offer: Callable
    cancel: Callable
    feedback: Callable


class TrajectoryAction:
    """The action server of one controller: `port` (GoalPort) is the way in, the topic's too.
    The node is used for rclpy's plumbing only: the server, a timer and the log.

    A goal runs without an execute callback waiting on it: rclpy's EventsExecutor polls a
    waiting task without pause, which takes the loop's CPU. So a goal stays ACCEPTED while the
    core runs it (a client sees no difference but the status), and `execute` is called once
    its outcome is known, to hand the result over at once.
    """

    def __init__(self, node, port, joint_names, monitor_rate):
        self.node, self.port, self.joint_names = node, port, list(joint_names)
        self.running = {}  # core Goal -> its goal handle
        self.ended = {}  # goal id -> (outcome, code, reason), until its result is out
        self.server = ActionServer(node, FollowJointTrajectory, "~/follow_joint_trajectory",
                                   execute_callback=self._result,
                                   handle_accepted_callback=self._accepted,
                                   cancel_callback=self._cancel)
        node.create_timer(1.0 / monitor_rate, self.monitor,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _accepted(self, handle):
        try:
            self.running[self.port.offer(request_from_goal(handle.request))] = handle
        except goals.GoalRefused as refusal:
            self.node.get_logger().error(f"goal refused: {refusal.reason} ({refusal.code})")
            self._end(handle, "aborted", refusal.code, refusal.reason)
        self.monitor()  # a refused goal, or the one it preempted, ends now

    def _cancel(self, handle):
        goal = next((g for g, h in self.running.items() if h is handle), None)
        if goal is None or not self.port.cancel(goal):
            return CancelResponse.REJECT
        return CancelResponse.ACCEPT

    def monitor(self):
        """Each running goal: its result once it ended, its feedback while it runs."""
        for goal, handle in list(self.running.items()):
            if goal.done:
                del self.running[goal]
                self._end(handle, goal.outcome, goal.code, goal.reason)
                continue
            feedback = self.port.feedback(goal)
            if feedback is not None:
                handle.publish_feedback(self._feedback(goal, *feedback))

    def _end(self, handle, outcome, code, reason):
        self.ended[bytes(handle.goal_id.uuid)] = (outcome, code, reason)
        handle.execute()  # -> _result, at once

    def _result(self, handle):
        outcome, code, reason = self.ended.pop(bytes(handle.goal_id.uuid))
        if outcome == "succeeded":
            handle.succeed()
        elif outcome == "canceled" and handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        result = FollowJointTrajectory.Result()
        result.error_code = getattr(FollowJointTrajectory.Result, code)
        result.error_string = reason
        return result

    def _feedback(self, goal, t, desired, actual, errors, index):
        msg = FollowJointTrajectory.Feedback(joint_names=self.joint_names)
        messages.set_stamp(msg.header.stamp, t)
        since = t - goal.trajectory.start_time
        messages.fill_point(msg.desired, since, *desired)
        messages.fill_point(msg.actual, since, *actual)
        messages.fill_point(msg.error, since, *errors)
        msg.index = index
        return msg


def code_name(value):
    """A FollowJointTrajectory result code's name (its value if it has none)."""
    names = {getattr(FollowJointTrajectory.Result, code): code for code in goals.CODES}
    return names.get(value, str(value))


def controller_state_writer(names):
    """The writer of ~/controller_state, or None without control_msgs."""
    if not AVAILABLE:
        return None
    return messages.ControllerStateWriter(JointTrajectoryControllerState, names)
