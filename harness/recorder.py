"""A node that records the closed loop from the outside: the controller's ~/error and
~/reference (which carries the commanded torque), its ~/current_pose and ~/target_pose, the
simulator's /joint_states (with the applied torque), and the latest /diagnostics status of each
node. Used by the demo and the integration tests; it spins in a background thread so the caller
can just wait and read.
"""

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from dyn_control.nodes import messages
from dyn_control.nodes.diagnostics import read_diagnostics

from .background import BackgroundNode

CONTROLLER = "/computed_torque_controller"


class Recorder(BackgroundNode):
    """cartesian: also record the poses and the simulator's joint states (1 kHz; off by
    default, so that the joint-space loops do not pay for them). urdf_text: also keep the run
    for a bag (harness.bag: `tap`), its topics read through the tap. namespace: the arm's
    ("/left"): its topics are read there, and its nodes' statuses are kept under their plain
    names ("left/computed_torque_controller" as "computed_torque_controller"). tap: a BagTap
    of another node that keeps a run of several arms: the topics it keeps are read through it.
    name: the node's (several recorders in one process need one each).
    """

    def __init__(self, controller=CONTROLLER, cartesian=False, urdf_text=None, namespace="",
                 tap=None, name="dyn_control_recorder"):
        super().__init__(name)
        controller = namespace + controller
        self.errors, self.references, self.states = [], [], []
        self.poses = {"current_pose": [], "target_pose": []}  # (t, p (3,), quaternion (4,))
        self.joint_names = None
        self.diagnostics = {}  # node name -> {key: value} of its latest status
        self.diagnostics_stamp = {}  # node name -> its latest status's stamp (s, its clock)

        def keep(store, with_names=False):
            def callback(msg):
                row = (messages.to_seconds(msg.header.stamp), np.array(msg.position),
                       np.array(msg.velocity), np.array(msg.effort))
                with self.lock:
                    if with_names and self.joint_names is None:
                        self.joint_names = list(msg.name)
                    store.append(row)
            return callback

        def pose(store):
            def callback(msg):
                p, o = msg.pose.position, msg.pose.orientation
                with self.lock:
                    store.append((messages.to_seconds(msg.header.stamp), np.array([p.x, p.y, p.z]),
                                  np.array([o.x, o.y, o.z, o.w])))
            return callback

        kinds = {}  # topic -> (message class, callback)
        if cartesian:  # the joint states (their names too) and the poses
            kinds[f"{namespace}/joint_states"] = (JointState, keep(self.states, True))
            for name, store in self.poses.items():
                kinds[f"{controller}/{name}"] = (PoseStamped, pose(store))
        else:
            kinds[f"{controller}/error"] = (JointState, keep(self.errors, True))
            kinds[f"{controller}/reference"] = (JointState, keep(self.references))
        self.tap = tap
        if urdf_text is not None:
            from .bag import BagTap, cartesian_topics
            self.tap = BagTap(self, urdf_text, cartesian_topics() if cartesian else None)
        for topic, (kind, callback) in kinds.items():
            if self.tap is None or topic not in self.tap.counts:  # a topic the bag does not keep
                self.create_subscription(kind, topic, callback, 1000)
            else:
                self.tap.readers[topic] = callback

        prefix = namespace.lstrip("/") + "/" if namespace else ""

        def diagnostics(msg):
            found = {name[len(prefix):] if prefix and name.startswith(prefix) else name: values
                     for name, values in read_diagnostics(msg).items()}
            stamp = messages.to_seconds(msg.header.stamp)
            with self.lock:
                self.diagnostics.update(found)
                self.diagnostics_stamp.update(dict.fromkeys(found, stamp))

        self.create_subscription(DiagnosticArray, "/diagnostics", diagnostics, 10)
        self.start()

    def series(self, name):
        """(times (k,), positions (k, n), velocities (k, n), efforts (k, n)) of a recorded topic."""
        with self.lock:
            rows = list(getattr(self, name))
        if not rows:
            return np.zeros(0), np.zeros((0, 0)), np.zeros((0, 0)), np.zeros((0, 0))
        return (np.array([r[0] for r in rows]), *(np.array([r[k] for r in rows]) for k in (1, 2,
                                                                                           3)))

    def pose_series(self, name):
        """(times (k,), positions (k, 3), quaternions (k, 4)) of current_pose or target_pose."""
        with self.lock:
            rows = list(self.poses[name])
        if not rows:
            return np.zeros(0), np.zeros((0, 3)), np.zeros((0, 4))
        return tuple(np.array([r[k] for r in rows]) for k in range(3))
