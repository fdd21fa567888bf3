"""cartesian_demo: drives computed_torque_controller in cartesian_impedance mode, and pushes the
simulated arm.

Waits for the controller's first ~/current_pose, then, on the node's clock (simulated time
under use_sim_time):
1. holds that pose `settle` s, then publishes target poses on ~/target_pose at 50 Hz along
   `circles` circles of `radius` in the base frame's y-z plane, `period` s each, starting and
   ending at that pose, holding its orientation (the nullspace holds the elbow at the posture
   it had);
2. holds the pose `settle` s, then has the simulator push the end effector with `push_force`
   (N, base axes) on dynamics_simulator's ~/external_wrench for `push_duration` s, lets go, and
   holds `settle` s more;
3. reports "done" on /diagnostics, where the times of each phase are (simulated s) from the
   start on, for the harness to cut its recording.
"""

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.clock import Clock, ClockType

from dyn_control import kinematics
from dyn_control.controller.watchdog import WAIT_SAY
from dyn_control.nodes import messages
from dyn_control.nodes.diagnostics import publish_diagnostics
from dyn_control.nodes.params import StartupError, declare_parameters, read_parameters
from dyn_control.nodes.process import ProcessNode, run
from dyn_control.parameters import CARTESIAN_DEMO

CONTROLLER = "computed_torque_controller"  # in this node's namespace
SIMULATOR = "dynamics_simulator"


class CartesianDemo(ProcessNode):
    NODE_NAME = "cartesian_demo"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        declare_parameters(self, CARTESIAN_DEMO)
        self.p = read_parameters(self, CARTESIAN_DEMO)
        force = np.asarray(self.p.push_force, dtype=float).ravel()
        if force.shape != (3,) or not np.all(np.isfinite(force)):
            raise StartupError(f"push_force must be 3 finite values (N, base axes), got "
                               f"{force.tolist()}")
        self.start = None  # (t0 s, R, p) once the first current pose came
        self.pose_msg = None
        self.phase = "waiting"
        self.target_pub = self.create_publisher(PoseStamped, f"{CONTROLLER}/target_pose", 10)
        self.push_pub = self.create_publisher(WrenchStamped, f"{SIMULATOR}/external_wrench", 10)
        self.create_subscription(PoseStamped, f"{CONTROLLER}/current_pose", self._on_pose, 10)
        self.create_timer(0.02, self._tick)
        publish_diagnostics(self, self.status, period=0.2)  # 5 Hz: the harness waits on it
        self._wait_say = self.create_timer(WAIT_SAY, self.say_waiting,
                                           clock=Clock(clock_type=ClockType.STEADY_TIME))

    def say_waiting(self):
        """Once, WAIT_SAY s after the start, what it still waits for."""
        self._wait_say.cancel()
        if self.start is None:
            self.get_logger().info(
                f"waiting for {CONTROLLER}/current_pose (the controller in cartesian_impedance) "
                f"and for {CONTROLLER} and {SIMULATOR} to listen on target_pose and "
                "external_wrench")

    def _now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _heard_by(self, topic, node):
        return any(info.node_name == node and info.node_namespace == self.get_namespace()
                   for info in self.get_subscriptions_info_by_topic(topic))

    def _on_pose(self, msg):
        # the controller and the simulator listen (not only a recorder), then the circle starts
        ready = (self._heard_by(f"{CONTROLLER}/target_pose", CONTROLLER) and
                 self._heard_by(f"{SIMULATOR}/external_wrench", SIMULATOR))
        if self.start is None and ready:
            o = msg.pose.orientation
            R = kinematics.quaternion_matrix(o.x, o.y, o.z, o.w)
            p = np.array([msg.pose.position.x, msg.pose.position.y, msg.pose.position.z])
            self.start = (messages.to_seconds(msg.header.stamp), R, p)
            self.pose_msg = messages.PoseWriter(PoseStamped, msg.header.frame_id)
            self.get_logger().info(f"circle about {np.round(p, 4).tolist()} m in "
                                   f"'{msg.header.frame_id}'")

    def phases(self):
        """{phase: simulated s}: the circle's start and end, the push's, and the end."""
        s = self.p
        circle = self.start[0] + s.settle
        circle_end = circle + s.circles * s.period
        push = circle_end + s.settle
        push_end = push + s.push_duration
        return {"circle": circle, "circle_end": circle_end, "push": push, "push_end": push_end,
                "end": push_end + s.settle}

    def status(self):
        """/diagnostics: the phase it is in, and when each phase is (None before the start)."""
        if self.start is None:
            return None
        return "OK", self.phase, {f"{k}_s": round(v, 6) for k, v in self.phases().items()}

    def _tick(self):
        if self.start is None or self.phase == "done":
            return
        t0, R, p0 = self.start
        s, phases = self.p, self.phases()
        t0 = phases["circle"]
        t = self._now() - t0
        circle_end, push_start, push_end, end = (phases[k] - t0 for k in
                                                 ("circle_end", "push", "push_end", "end"))
        if 0 <= t < circle_end:
            phase = 2 * np.pi * t / s.period
            p = p0 + s.radius * np.array([0.0, np.cos(phase) - 1.0, np.sin(phase)])
        else:
            p = p0
        self.target_pub.publish(self.pose_msg.fill(self._now(), R, p))
        if t >= push_start and self.phase != "pushing" and t < push_end:
            self._push(s.push_force)
            self.phase = "pushing"
        elif t >= push_end and self.phase == "pushing":
            self._push([0.0, 0.0, 0.0])
            self.phase = "released"
        elif t >= end and self.phase == "released":
            self.phase = "done"
            self.get_logger().info("done: " + ", ".join(f"{k} {v:.3f} s" for k,
                                                        v in phases.items()))

    def _push(self, force):
        msg = WrenchStamped()
        messages.set_stamp(msg.header.stamp, self._now())
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(f) for f in force)
        self.push_pub.publish(msg)
        self.get_logger().info(f"push {list(force)} N")

    def shutdown(self):
        pass


def main(args=None):
    return run(CartesianDemo, args)


if __name__ == "__main__":
    raise SystemExit(main())
