"""identify: runs the identification on a live arm and exits.

Waits for the controller's FollowJointTrajectory action and one /joint_states (the runs start
and end at rest there), plans an optimized Fourier excitation and a different validation run
(dyn_control.identification.excitation), and sends each as a goal. While a goal runs, every
/joint_states message goes as it came (serialized, as `ros2 bag record` stores it) into a rosbag2
MCAP folder: out_dir/identify_<name>_excitation and _validation, each written as <folder>.partial
until its run ends whole, so that Ctrl-C or a failed goal never replaces a good recording with
a truncated one. Then it fits from those files alone (dyn_control.identification.offline) and
writes out_dir/identified_<name>.urdf and the report.
The outcome is on /diagnostics (status "identify": message "waiting", "excitation",
"validation", "done" or the refusal; values the output paths and the validation errors) and
in the exit code: 0 done, 2 a refused recording or goal.
"""

import pathlib
import shutil

from rclpy.action import ActionClient
from rclpy.clock import Clock, ClockType
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from dyn_control.identification import offline as identify
from dyn_control.identification.excitation import optimize
from dyn_control.identification.fit import BaseParameters
from dyn_control.nodes import messages, trajectory_action
from dyn_control.nodes.diagnostics import publish_diagnostics
from dyn_control.nodes.model_source import build_chain, model_text
from dyn_control.nodes.params import StartupError, declare_parameters, read_parameters
from dyn_control.nodes.process import ProcessNode, run
from dyn_control.parameters import IDENTIFY
from dyn_control.recording import BagWriter, read_states

CONTROLLER = "computed_torque_controller"  # in this node's namespace
RUNS = ("excitation", "validation")


def partial(path):
    """Where a run records until it ends whole: an interrupted or failed run leaves its states
    there, and the recording of an earlier whole run at `path` as it was.
    """
    return path.with_name(path.name + ".partial")


class Identifier(ProcessNode):
    NODE_NAME = "identify"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        declare_parameters(self, IDENTIFY)
        self.p = p = read_parameters(self, IDENTIFY)
        self.source = model_text(self)
        if self.source is None:
            raise StartupError("identify needs robot_description or urdf_file")
        if not trajectory_action.AVAILABLE:
            raise StartupError("identify needs control_msgs: it sends each run as a "
                               "FollowJointTrajectory goal, whose result says when it ended")
        self.chain, _ = build_chain(self, self.source)
        self.name = p.name or (pathlib.Path(p.urdf_file).stem if p.urdf_file else "arm")
        self.out = pathlib.Path(p.out_dir)
        self.reader = messages.JointStateReader(self.chain.joint_names)
        self.action = ActionClient(self, trajectory_action.FollowJointTrajectory,
                                   f"{CONTROLLER}/follow_joint_trajectory")
        self.plans, self.bag, self.bags = None, None, {}
        self.report = ("waiting", {})
        self.state_sub = None
        self._poll = self.create_timer(0.1, self.on_poll,
                                       clock=Clock(clock_type=ClockType.STEADY_TIME))
        publish_diagnostics(self, lambda: ("OK" if self.exit_code in (None, 0) else "WARN",
                                           *self.report), period=0.2)

    def on_poll(self):
        if self.state_sub is not None or not self.action.server_is_ready():
            return
        self._poll.cancel()
        # best effort matches reliable and best-effort publishers alike; 1000 deep, because a
        # starved executor lost states from the sensor-data profile's 5 (gaps of 62 ms seen
        # under load). signals.prepare copes with the gaps that remain.
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.state_sub = self.create_subscription(JointState, "joint_states", self.on_state,
                                                  qos, raw=True)

    def on_state(self, raw):
        if self.bag is not None:
            self.bag.write(self.get_clock().now().nanoseconds, raw)
        if self.plans is not None:
            return
        try:
            start = self.reader.read(deserialize_message(raw, JointState))[0]
        except messages.BadMessage:
            return
        p, base = self.p, BaseParameters(self.chain)
        self.plans = [optimize(self.chain, base, start, p.period, int(p.harmonics),
                               seed=int(p.seed) + k)[0] for k in range(len(RUNS))]
        self.next_run()

    def next_run(self):
        """Send the next run as a goal, recording; once both are recorded, fit."""
        if self.bag is not None:  # the run just ended whole: its recording replaces an
            self.bag.close()      # earlier call's
            self.bag = None
            path = self.bags[RUNS[len(self.bags) - 1]]
            if path.exists():
                shutil.rmtree(path)
            partial(path).rename(path)
        k = len(self.bags)
        if k == len(RUNS):
            return self.finish()
        path = self.out / f"identify_{self.name}_{RUNS[k]}"
        if partial(path).exists():
            shutil.rmtree(partial(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.bags[RUNS[k]] = path
        self.bag = BagWriter(partial(path))
        trajectory, rate = self.plans[k], self.p.points_per_second
        msg = JointTrajectory(joint_names=self.chain.joint_names)
        duration = self.p.periods * trajectory.period
        times = [i / rate for i in range(int(round(duration * rate)) + 1)]
        for t, q, qd, qdd in zip(times, *trajectory(times)):
            msg.points.append(JointTrajectoryPoint(
                positions=q.tolist(), velocities=qd.tolist(), accelerations=qdd.tolist(),
                time_from_start=messages.to_duration(t)))
        # at rest at both ends (whole periods): exactly, as JTC checks the last point's
        # velocity against 0 (the series gives 1e-16)
        for point in (msg.points[0], msg.points[-1]):
            point.velocities = point.accelerations = [0.0] * self.chain.n
        goal = trajectory_action.FollowJointTrajectory.Goal(trajectory=msg)
        self.action.send_goal_async(goal).add_done_callback(self._on_response)
        self.report = (RUNS[k], {"duration_s": duration, "points": len(times)})

    def _on_response(self, future):
        handle = future.result()
        if not handle.accepted:
            return self.end(2, f"the controller rejected the {RUNS[len(self.bags) - 1]} goal")
        handle.get_result_async().add_done_callback(self._on_result)

    def _on_result(self, future):
        result = future.result().result
        if result.error_code != 0:
            code = trajectory_action.code_name(result.error_code)
            return self.end(2, f"the {RUNS[len(self.bags) - 1]} goal ended {code}: "
                               f"{result.error_string}")
        self.next_run()

    def finish(self):
        try:
            recordings = [read_states(self.bags[run], self.chain.joint_names) for run in RUNS]
            urdf_text, report = identify.identify(
                self.chain, self.source, *recordings,
                effort_delay=self.p.effort_delay)
        except ValueError as err:  # a refused recording: one line
            return self.end(2, str(err))
        paths = identify.write_outputs(self.out, self.name, urdf_text, report)
        errors = report["validation_identified_rms_error_share"]
        self.end(0, "done", {**{k: str(v) for k, v in paths.items()},
                             "validation_worst_error_share": max(errors)})

    def end(self, code, message, values=None):
        if self.bag is not None:
            self.bag.close()
            self.bag = None
        (self.get_logger().info if code == 0 else self.get_logger().error)(
            f"identify: {message}")
        self.report = (message, values or {})
        self.exit_code = code

    def shutdown(self):
        if self.bag is not None:
            self.bag.close()


def main(args=None):
    return run(Identifier, args)
