"""`ros2 run dyn_control teach`: show the arm a motion by hand, then play it back.

    teach [--controller computed_torque_controller] [--seconds S] [--mode computed_torque]
    teach --replay BAG [--controller ...]

Without --replay: sets the controller's `mode` to teach (gravity and friction compensation,
light damping, the limits on), starts ~/teach/record, records for S seconds (default: until
Enter), stops it (the rosbag2 folder's path is printed), and plays the recording back in
--mode (default: the mode the controller was in, or computed_torque if that was not a joint
mode). With --replay BAG: the playback alone. The playback is a FollowJointTrajectory goal
(dyn_control.controller.teach.replay_points: smoothed, thinned, led in from where the arm is)
on the controller's ~/follow_joint_trajectory, checked against the limits as any goal is.

It leaves the arm as it found it: the arguments and the recording to replay are checked before
any mode changes, and on every exit (the end, Enter, Ctrl-C or SIGTERM, an error) a recording
under way is stopped and kept, and the mode that was in effect is set back; each step is said.
Exit code 0 when the goal succeeded, 1 when it did not, 2 when a step failed (a bad argument, a
service that does not answer, a bad recording), with one line saying which, 130 when
interrupted.
"""

import argparse
import signal
import sys
import threading
import time

import numpy as np

from dyn_control.controller import teach
from dyn_control.parameters import MODES
from dyn_control.recording import state_names

TIMEOUT = 10.0  # s for a service's answer
INTERRUPTED = threading.Event()  # set by Ctrl-C or SIGTERM (main's handler)


class Interrupted(Exception):
    """Ctrl-C or SIGTERM came: raised from a spin of the teach tool's own, never from inside
    rclpy, so that the undoing after it can still call the controller.
    """


class TeachClient:
    """What the teach tool asks of one controller, over a node of the caller's: its `mode`, its
    ~/teach/record, its ~/follow_joint_trajectory; and what it hears: the latest joint state,
    every one while `keep` is set (times, positions), and the controller's /diagnostics.
    """

    def __init__(self, node, controller="computed_torque_controller"):
        from diagnostic_msgs.msg import DiagnosticArray
        from rcl_interfaces.srv import SetParameters
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState
        from std_srvs.srv import SetBool

        from dyn_control.nodes import trajectory_action
        from dyn_control.nodes.diagnostics import read_diagnostics, status_name

        self.node, self.controller = node, controller.rstrip("/")
        self.lock = threading.Lock()
        self.record_client = node.create_client(SetBool, f"{self.controller}/teach/record")
        self.parameters = node.create_client(SetParameters, f"{self.controller}/set_parameters")
        self.action = (ActionClient(node, trajectory_action.FollowJointTrajectory,
                                    f"{self.controller}/follow_joint_trajectory")
                       if trajectory_action.AVAILABLE else None)
        self.latest, self.kept, self.keep, self.status = None, [], False, {}
        self.interruptible = True  # a signal (INTERRUPTED) ends the next spin

        def on_state(msg):
            t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            with self.lock:
                self.latest = (list(msg.name), t, np.array(msg.position))
                if self.keep:
                    self.kept.append(self.latest)

        def on_diagnostics(msg):
            found = read_diagnostics(msg)
            if name in found:
                with self.lock:
                    self.status = found[name]

        # a relative controller name is in this node's namespace, as its topics
        name = status_name(node.resolve_service_name(self.controller, only_expand=True))
        node.create_subscription(JointState, "joint_states", on_state, 10)
        node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)

    def _wait(self, future, timeout, what):
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end:
            self.spin_for(0.05)
        if not future.done():
            raise RuntimeError(f"no answer from {what} within {timeout:g} s")
        return future.result()

    def _ready(self, client, what, timeout=TIMEOUT):
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"{what} is not served (is the controller running?)")

    def wait_ready(self, timeout=120.0):
        """Until the controller reports on /diagnostics (it has its model, its kernels are
        compiled: before that its services wait behind the start-up); RuntimeError after
        `timeout` s.
        """
        end = time.monotonic() + timeout
        while True:
            with self.lock:
                if self.status:
                    return
            if time.monotonic() > end:
                raise RuntimeError(f"{self.controller} said nothing on /diagnostics within "
                                   f"{timeout:g} s (is it running?)")
            self.spin_for(0.1)

    def get_mode(self):
        """The controller's `mode` now; RuntimeError when it does not answer."""
        from rcl_interfaces.srv import GetParameters
        what = f"{self.controller}/get_parameters"
        if not hasattr(self, "getter"):
            self.getter = self.node.create_client(GetParameters, what)
        self._ready(self.getter, what)
        answer = self._wait(self.getter.call_async(GetParameters.Request(names=["mode"])),
                            TIMEOUT, what)
        return answer.values[0].string_value

    def set_mode(self, mode):
        """Set the controller's `mode`; RuntimeError with its reason when refused."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters
        what = f"{self.controller}/set_parameters"
        self._ready(self.parameters, what)
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=mode)
        request = SetParameters.Request(parameters=[Parameter(name="mode", value=value)])
        result = self._wait(self.parameters.call_async(request), TIMEOUT, what).results[0]
        if not result.successful:
            raise RuntimeError(f"the controller refused mode {mode}: {result.reason}")

    def record(self, on):
        """Start (True) or stop (False) the recording -> the answer's message (the bag's path
        when stopped); RuntimeError when refused.
        """
        from std_srvs.srv import SetBool
        what = f"{self.controller}/teach/record"
        self._ready(self.record_client, what)
        answer = self._wait(self.record_client.call_async(SetBool.Request(data=on)), TIMEOUT,
                            what)
        if not answer.success:
            raise RuntimeError(f"{what}: {answer.message}")
        return answer.message

    def spin_for(self, seconds):
        """Spin the node for `seconds`; Interrupted between two spins once a signal came
        (INTERRUPTED), never inside rclpy's wait: raised there, it left the next service call
        unanswered (seen under load, after SIGTERM).
        """
        import rclpy
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(self.node, timeout_sec=max(min(0.05, end - time.monotonic()), 0.0))
            if INTERRUPTED.is_set() and self.interruptible:
                INTERRUPTED.clear()
                raise Interrupted()

    def position(self, names, timeout=TIMEOUT):
        """The latest measured positions of `names`; RuntimeError when no state came."""
        end = time.monotonic() + timeout
        while True:
            with self.lock:
                latest = self.latest
            if latest is not None and all(n in latest[0] for n in names):
                order, _, q = latest
                return q[[order.index(n) for n in names]]
            if time.monotonic() > end:
                raise RuntimeError(f"no /joint_states naming {', '.join(names)} within "
                                   f"{timeout:g} s")
            self.spin_for(0.05)

    def replay(self, path, timeout=None):
        """Play the recording at `path` back -> (result code name, error string, the goal's
        points). RuntimeError when the action is not there or a bad recording.
        """
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        from dyn_control.nodes import messages, trajectory_action
        if self.action is None:
            raise RuntimeError(trajectory_action.MISSING)
        try:
            names = state_names(path)
            t, q = teach.read_motion(path, names)
            points = teach.replay_points(t, q, self.position(names))
        except ValueError as err:
            raise RuntimeError(str(err)) from None
        msg = JointTrajectory(joint_names=names)
        for tk, p, v, a in points:
            msg.points.append(JointTrajectoryPoint(
                positions=p.tolist(), velocities=v.tolist(), accelerations=a.tolist(),
                time_from_start=messages.to_duration(tk)))
        what = f"{self.controller}/follow_joint_trajectory"
        if not self.action.wait_for_server(timeout_sec=TIMEOUT):
            raise RuntimeError(f"{what} is not served")
        handle = self._wait(self.action.send_goal_async(
            trajectory_action.FollowJointTrajectory.Goal(trajectory=msg)), TIMEOUT, what)
        if not handle.accepted:
            return "REJECTED", "the action server rejected the goal", points
        limit = timeout if timeout is not None else 10 * points[-1][0] + 60
        try:
            result = self._wait(handle.get_result_async(), limit, what).result
        except Interrupted:  # the goal ends with us: the arm holds where it is
            self.interruptible = False
            self._wait(handle.cancel_goal_async(), TIMEOUT, what)
            raise
        return trajectory_action.code_name(result.error_code), result.error_string, points


class Session:
    """The teach tool's changes to one controller, each undone on leaving: the mode it found
    (set back), a recording it started (stopped, its path said).
    """

    def __init__(self, client, say):
        self.client, self.say = client, say
        self.found = self.recording = None

    def __enter__(self):
        self.found = self.client.get_mode()
        return self

    def mode(self, mode):
        if mode != self.client.get_mode():
            self.client.set_mode(mode)
            self.say(f"{self.client.controller} in mode {mode} (was {self.found})")

    def record(self, on):
        path = self.client.record(on)
        self.recording = on
        return path

    def __exit__(self, *_):
        self.client.interruptible = False  # a second signal does not cut the undoing short
        try:  # each undo on its own: a failed stop must not keep the mode from coming back
            if self.recording:
                self.say(f"recording stopped and kept in {self.record(False)}")
        finally:
            if self.found is not None and self.client.get_mode() != self.found:
                self.client.set_mode(self.found)
                self.say(f"{self.client.controller} back in mode {self.found}")


def check_arguments(args):
    """One line naming a bad argument, or None: before anything changes on the controller."""
    if args.mode is not None and args.mode not in MODES:
        return f"--mode {args.mode!r} is not a joint mode (one of {', '.join(MODES)})"
    if args.seconds is not None and not args.seconds > 0:
        return f"--seconds must be over 0, got {args.seconds:g}"
    if args.replay is not None:
        try:
            state_names(args.replay)
        except (ValueError, OSError) as err:
            return f"--replay: {err}"
    return None


def _interrupt(*_):
    INTERRUPTED.set()  # the next spin raises Interrupted: the session's undo runs


def main(argv=None):
    parser = argparse.ArgumentParser(prog="teach", description=__doc__.split("\n")[0])
    parser.add_argument("--controller", default="computed_torque_controller",
                        help="the controller's name, in the namespace given by --ros-args -r "
                             "__ns:=/NS unless it starts with /")
    parser.add_argument("--seconds", type=float, default=None,
                        help="how long to record (default: until Enter)")
    parser.add_argument("--mode", default=None,
                        help="the joint mode to play back in (default: the controller's, or "
                             "computed_torque)")
    parser.add_argument("--replay", default=None, help="play this recording back, only")
    args, ros_args = parser.parse_known_args(argv)
    problem = check_arguments(args)
    if problem:
        print(f"teach: {problem}", file=sys.stderr)
        return 2
    # Ctrl-C and SIGTERM from here on reach the session, which undoes what it did (the entry
    # point's handler ended the process at once, recording and in mode teach)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    import rclpy
    rclpy.init(args=ros_args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node("teach")
    client = TeachClient(node, args.controller)

    def say(text):
        print(f"teach: {text}", flush=True)

    try:
        client.wait_ready()
        with Session(client, say) as session:
            path = args.replay
            if path is None:
                session.mode("teach")
                say("move the arm")
                session.record(True)
                if args.seconds is None:
                    waiting = threading.Thread(target=input, args=("teach: Enter stops the "
                                                                   "recording\n",), daemon=True)
                    waiting.start()
                    while waiting.is_alive():
                        client.spin_for(0.1)
                else:
                    client.spin_for(args.seconds)
                path = session.record(False)
                say(f"recorded in {path}")
            session.mode(args.mode or (session.found if session.found in MODES
                                       else "computed_torque"))
            code, text, points = client.replay(path)
            say(f"replay of {len(points)} points over {points[-1][0]:.1f} s: {code}"
                + (f": {text}" if text else ""))
        return 0 if code == "SUCCESSFUL" else 1
    except (RuntimeError, OSError) as err:
        print(f"teach: {err}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt):
        print("teach: interrupted", file=sys.stderr)
        return 130
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    raise SystemExit(main())
