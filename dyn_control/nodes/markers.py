"""computed_torque_controller's ~/markers (visualization_msgs/MarkerArray), for RViz: what the
controller is doing, in the root link's frame, MARKER_RATE times a second (the node's clock;
a timer beside the tick, never in it).
- ns "desired_path": per hand (the ee_links; the tip by default), a line through where the active
  trajectory takes it, 100 points, computed once per trajectory;
- ns "target": in cartesian_impedance, each ee_link's target pose as an arrow along its x axis;
- ns "push": with the external-torque observer, the wrench the world applies at each ee_link, an
  arrow ending at the hand, 1 cm per N, shown above PUSH_SHOWN_N;
- ns "walls": with the limits on, each ee_link's box (limits.workspace_min/max) as a
  translucent cube, a side further out than WALL_SHOWN_M from the root drawn there.
A marker that no longer applies is deleted (DELETE of its ns and id).
"""

import numpy as np
from geometry_msgs.msg import Point
from visualization_msgs.msg import Marker, MarkerArray

from dyn_control import kinematics
from dyn_control.nodes import messages

MARKER_RATE = 10.0  # Hz
PATH_POINTS = 100
PUSH_SHOWN_N = 2.0  # N: below it, model error rather than a push
METRES_PER_NEWTON = 0.01
WALL_SHOWN_M = 2.0  # m: a wall set further out (a side left open) is drawn here
COLORS = {"desired_path": (0.2, 0.6, 1.0), "target": (1.0, 0.6, 0.0), "push": (1.0, 0.1, 0.1),
          "walls": (0.9, 0.9, 0.2)}
ALPHA = {"walls": 0.15}  # see-through: the arm inside stays visible


class MarkerTopic:
    def __init__(self, node):
        self.node = node
        self.pub = node.create_publisher(MarkerArray, "~/markers", 10)
        self.path_of = None  # the trajectory the path was computed for
        self.paths = []
        node.create_timer(1.0 / MARKER_RATE, self.publish)

    def publish(self):
        core = self.node.core
        if core is None or core.state is None:
            return
        t, q, _ = core.state
        chain = core.model
        hands = core.settings.cartesian.ee_link
        markers = []
        trajectory = core.trajectory
        if trajectory is not self.path_of:
            self.path_of = trajectory
            moving = trajectory is not None and trajectory.knots[-1] > 0  # not a hold
            self.paths = path_points(chain, trajectory, hands) if moving else []
        for k, points in enumerate(self.paths):
            markers.append(self._marker("desired_path", k, Marker.LINE_STRIP, t, points=points))
        for k in range(len(self.paths), len(hands)):
            markers.append(self._delete("desired_path", k))
        task = core.cartesian_task
        for k in range(len(hands)):
            if task is not None and k < len(task.targets):
                R, p = task.targets[k]
                markers.append(self._marker("target", k, Marker.ARROW, t, pose=(R, p)))
            else:
                markers.append(self._delete("target", k))
        forces = core.contact_wrenches(q)[:, :3] if core.observing else None
        for k, link in enumerate(hands):
            f = None if forces is None or k >= len(forces) else forces[k]
            if f is not None and np.linalg.norm(f) > PUSH_SHOWN_N:
                _, p = kinematics.frame_pose(chain, q, link)
                markers.append(self._marker("push", k, Marker.ARROW, t,
                                            points=[p - METRES_PER_NEWTON * f, p]))
            else:
                markers.append(self._delete("push", k))
        guard = core.settings.guard
        for k in range(len(hands)):
            low, high = guard.workspace_min[k], guard.workspace_max[k]
            if guard.enabled and np.isfinite(np.concatenate([low, high])).any():
                low = np.maximum(low, -WALL_SHOWN_M)
                high = np.maximum(np.minimum(high, WALL_SHOWN_M), low)
                markers.append(self._marker("walls", k, Marker.CUBE, t, box=(low, high)))
            else:
                markers.append(self._delete("walls", k))
        self.pub.publish(MarkerArray(markers=markers))

    def _marker(self, ns, k, kind, t, points=None, pose=None, box=None):
        m = Marker(ns=ns, id=k, type=kind, action=Marker.ADD)
        m.header.frame_id = self.node.core.model.root_link
        messages.set_stamp(m.header.stamp, t)
        m.color.r, m.color.g, m.color.b = COLORS[ns]
        m.color.a = ALPHA.get(ns, 1.0)
        m.pose.orientation.w = 1.0
        if box is not None:  # a cube from box[0] to box[1], axis-aligned in the base frame
            low, high = box
            m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(x) for x in
                                                                       (low + high) / 2)
            m.scale.x, m.scale.y, m.scale.z = (float(x) for x in high - low)
        elif pose is not None:  # an arrow along the pose's x axis
            R, p = pose
            m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(x) for x in p)
            x, y, z, w = kinematics.matrix_quaternion(R)
            m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z = x, y, z
            m.pose.orientation.w = w
            m.scale.x, m.scale.y, m.scale.z = 0.1, 0.01, 0.01  # length, shaft, head
        elif kind == Marker.ARROW:  # from points[0] to points[1]
            m.scale.x, m.scale.y, m.scale.z = 0.01, 0.02, 0.03  # shaft, head diameter, head
        else:
            m.scale.x = 0.005  # line width
        m.points = [Point(x=float(a), y=float(b), z=float(c)) for a, b,
                    c in (() if points is None else points)]
        return m

    def _delete(self, ns, k):
        m = Marker(ns=ns, id=k, action=Marker.DELETE)
        m.header.frame_id = self.node.core.model.root_link
        return m


def path_points(chain, trajectory, hands):
    """Per hand, (PATH_POINTS, 3) positions (m, base frame) along the trajectory, start to end."""
    times = trajectory.start_time + np.linspace(0.0, trajectory.knots[-1], PATH_POINTS)
    qs = trajectory.sample_many(times)[0]
    return [np.array([kinematics.frame_pose(chain, q, link)[1] for q in qs]) for link in hands]
