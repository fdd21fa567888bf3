"""The URDF's joints as transforms, parent link to child link, as robot_state_publisher makes
/tf and /tf_static of them: what a bag needs to show the arm with no robot_state_publisher.
Pure numpy over the URDF (urdf.parse), not over a Chain: the chain lumps fixed links into
bodies, a viewer wants every link. test/test_demo_bag.py checks the composition of these
against the chain's forward kinematics.
"""

import numpy as np

from dyn_control.kinematics import rotation_exp
from dyn_control.model.urdf import origin_pose, parse, read_urdf_text

MOVABLE = ("revolute", "continuous", "prismatic")


class JointTransforms:
    """Every joint of a URDF (file, xacro or text) as (parent, child, R (3, 3), p (3,)): the
    child link's frame in the parent's.

    `static(moving)`: the joints whose transform never changes, for /tf_static: the fixed
    joints, and the movable joints not in `moving` (a gripper's locked fingers, joints no
    state names), at zero as the simulator keeps them. `at(positions)`: the joints named in
    `positions` (name -> rad or m), for /tf. Floating and planar joints count as fixed at
    their origin (the arm's base does not move here).
    """

    def __init__(self, source):
        robot = parse(read_urdf_text(source))
        self.root = robot.get_root()
        self.joints = []  # (name, parent, child, R0, p0, axis, kind)
        for joint in robot.joints:
            R0, p0 = origin_pose(joint.origin)
            axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), float)
            norm = np.linalg.norm(axis)
            kind = joint.type if joint.type in MOVABLE and norm > 0 else "fixed"
            self.joints.append((joint.name, joint.parent, joint.child, R0, p0,
                                axis / (norm if norm > 0 else 1.0), kind))

    def _pose(self, R0, p0, axis, kind, value):
        if kind == "prismatic":
            return R0, p0 + R0 @ (axis * value)
        if kind == "fixed":
            return R0, p0
        return R0 @ rotation_exp(axis * value), p0

    def static(self, moving=()):
        moving = set(moving)
        return [(parent, child, *self._pose(R0, p0, axis, kind, 0.0))
                for name, parent, child, R0, p0, axis, kind in self.joints
                if kind == "fixed" or name not in moving]

    def at(self, positions):
        return [(parent, child, *self._pose(R0, p0, axis, kind, positions[name]))
                for name, parent, child, R0, p0, axis, kind in self.joints
                if kind != "fixed" and name in positions]


def link_poses(edges, root):
    """{link: (R, p)} in the root link's frame, of every link the edges [(parent, child, R, p)]
    reach from `root` (the root itself at the identity).
    """
    children = {}
    for parent, child, R, p in edges:
        children.setdefault(parent, []).append((child, R, p))
    poses, todo = {root: (np.eye(3), np.zeros(3))}, [root]
    while todo:
        parent = todo.pop()
        Rp, pp = poses[parent]
        for child, R, p in children.get(parent, ()):
            poses[child] = (Rp @ R, Rp @ p + pp)
            todo.append(child)
    return poses
