"""trajectory_demo: sends the controller one smooth multi-point trajectory within the limits.

Waits for the controller, then takes one /joint_states (the trajectory is centred there) and
sends a quintic JointTrajectory (positions, velocities, accelerations) with header.stamp =
0, "start now" (see dyn_control.controller.trajectory.sine_waypoints): as a FollowJointTrajectory
goal, as MoveIt sends one, and logs its result; or, with `interface: topic` or without control_msgs,
on the controller's ~/joint_trajectory topic. What it sent and the goal's result are on
/diagnostics too (status "trajectory_demo": message "waiting", "sent" or the result code;
values points, duration_s, interface, and result and result_string once the goal ends).
"""

from rclpy.action import ActionClient
from rclpy.clock import Clock, ClockType
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.controller.trajectory import demo_waypoints
from dyn_control.controller.watchdog import WAIT_SAY
from dyn_control.nodes import messages, trajectory_action
from dyn_control.nodes.diagnostics import publish_diagnostics
from dyn_control.nodes.model_source import build_chain, model_text
from dyn_control.nodes.params import StartupError, declare_parameters, read_parameters
from dyn_control.nodes.process import ProcessNode, run
from dyn_control.parameters import TRAJECTORY_DEMO

CONTROLLER = "computed_torque_controller"  # in this node's namespace


class TrajectoryDemo(ProcessNode):
    NODE_NAME = "trajectory_demo"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        declare_parameters(self, TRAJECTORY_DEMO)
        self.p = read_parameters(self, TRAJECTORY_DEMO)
        source = model_text(self)
        if source is None:
            raise StartupError("trajectory_demo needs robot_description or urdf_file")
        self.chain, _ = build_chain(self, source)
        self.reader = messages.JointStateReader(self.chain.joint_names)
        self.sent = False
        self.report = ("waiting", {})  # /diagnostics: (message, values)
        self.action = None
        if self.p.interface == "action":
            if trajectory_action.AVAILABLE:
                self.action = ActionClient(self, trajectory_action.FollowJointTrajectory,
                                           f"{CONTROLLER}/follow_joint_trajectory")
            else:
                self.get_logger().info("control_msgs is not installed: the trajectory goes "
                                       "on the ~/joint_trajectory topic")
        self.pub = self.create_publisher(JointTrajectory, f"{CONTROLLER}/joint_trajectory", 10)
        self.state_sub = None
        # polling for readiness is no matter of simulated time: on the steady clock, and done
        # with once the controller is ready
        self._poll = self.create_timer(0.1, self.on_poll,
                                       clock=Clock(clock_type=ClockType.STEADY_TIME))
        # 5 Hz: the harness waits on it for the result
        publish_diagnostics(self, lambda: ("OK", *self.report), period=0.2)
        self._wait_say = self.create_timer(WAIT_SAY, self.say_waiting,
                                           clock=Clock(clock_type=ClockType.STEADY_TIME))

    def say_waiting(self):
        """Once, WAIT_SAY s after the start, what it still waits for (nothing: silence)."""
        self._wait_say.cancel()
        if self.sent:
            return
        awaited = (f"a joint state on /joint_states naming {', '.join(self.chain.joint_names)}"
                   if self.state_sub is not None else
                   f"{CONTROLLER}'s follow_joint_trajectory action server"
                   if self.action is not None else f"a subscriber on {CONTROLLER}/joint_trajectory")
        self.get_logger().info(f"waiting for {awaited}")
        self.report = ("waiting", {"waiting_for": awaited})

    def ready(self):
        return (self.action.server_is_ready() if self.action is not None else
                self.pub.get_subscription_count() > 0)

    def on_poll(self):
        """Once the controller is ready, listen for the state to start from.

        Not before: an arm the controller does not hold yet moves (a payload it does not know
        sags it), and a trajectory centred on a state from before the wait would start away
        from the arm.
        """
        if self.state_sub is not None or self.sent or not self.ready():
            return
        self._poll.cancel()
        # sensor-data QoS (best effort) matches reliable and best-effort publishers alike
        self.state_sub = self.create_subscription(JointState, "joint_states", self.on_state,
                                                  qos_profile_sensor_data)

    def on_state(self, msg):
        if self.sent:
            return
        try:
            start = self.reader.read(msg)[0]
        except messages.BadMessage:
            return
        # one state is all it needs: stop taking the 1 kHz stream
        self.destroy_subscription(self.state_sub)
        self.send(start)

    def send(self, start):
        p = self.p
        times, q, qd, qdd = demo_waypoints(self.chain, start, p.duration, p.amplitude,
                                           p.frequency, p.points_per_second)
        msg = JointTrajectory(joint_names=self.chain.joint_names)
        for k, t in enumerate(times):
            msg.points.append(JointTrajectoryPoint(
                positions=q[k].tolist(), velocities=qd[k].tolist(), accelerations=qdd[k].tolist(),
                time_from_start=messages.to_duration(t)))
        if self.action is not None:
            goal = trajectory_action.FollowJointTrajectory.Goal(trajectory=msg)
            self.action.send_goal_async(goal).add_done_callback(self._on_response)
        else:
            self.pub.publish(msg)
        self.sent = True
        interface = "action" if self.action is not None else "topic"
        self.report = ("sent", {"points": len(times), "duration_s": float(times[-1]),
                                "interface": interface})
        self.get_logger().info(f"sent {len(times)} points over {times[-1]:.1f} s ({interface})")

    def _on_response(self, future):
        handle = future.result()
        if not handle.accepted:
            self._result("REJECTED", "the action server rejected the goal")
            return
        handle.get_result_async().add_done_callback(self._on_result)

    def _on_result(self, future):
        result = future.result().result
        self._result(trajectory_action.code_name(result.error_code), result.error_string)

    def _result(self, code, text):
        self.report = (code, {**self.report[1], "result": code, "result_string": text})
        self.get_logger().info(f"goal result: {code}: {text}")

    def shutdown(self):
        pass


def main(args=None):
    return run(TrajectoryDemo, args)


if __name__ == "__main__":
    raise SystemExit(main())
