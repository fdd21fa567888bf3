"""A URDF's links and joints as a checked tree, the choice of the model's joints in it (a path,
a tree, a hand's fingers locked), and the lumping of the links a body carries. No ROS import.
"""

import numpy as np

from dyn_control.model.inertia import check_inertia, combine_bodies
from dyn_control.model.urdf import URDFError, compose, finite_pose, link_inertial


class AmbiguousTip(URDFError):
    """No single longest path: `ends` (the links where the tied paths of `joints` movable joints
    end) and `outline` (the tree, for a person to choose from). Callers name their own way to
    choose (a node's tip_link or joints, inspect's --tip or --joints).
    """

    def __init__(self, ends, joints, outline, how="set tip_link or joints"):
        self.ends, self.joints, self.outline = ends, joints, outline
        super().__init__(f"tip link is ambiguous: {len(ends)} paths of {joints} movable joints "
                         f"end at links {ends}; {how}")

    def choose_with(self, how):
        """The same error, naming another way to choose."""
        return AmbiguousTip(self.ends, self.joints, self.outline, how)


class Tree:
    """Links and joints of a URDF as a checked tree: one root, one parent per link, no cycles."""

    def __init__(self, robot):
        self.links = {}
        for link in robot.links:
            if link.name in self.links:
                raise URDFError(f"link '{link.name}' is defined twice")
            self.links[link.name] = link
        self.joints = {}
        self.parent_joint = {}  # child link -> joint
        self.child_joints = {name: [] for name in self.links}
        for joint in robot.joints:
            if joint.name in self.joints:
                raise URDFError(f"joint '{joint.name}' is defined twice")
            self.joints[joint.name] = joint
            for role, link in (("parent", joint.parent), ("child", joint.child)):
                if link not in self.links:
                    raise URDFError(f"joint '{joint.name}': {role} link '{link}' is not defined")
            if joint.child in self.parent_joint:
                other = self.parent_joint[joint.child].name
                raise URDFError(
                    f"link '{joint.child}' has two parents (joints '{other}' and '{joint.name}')")
            self.parent_joint[joint.child] = joint
            self.child_joints[joint.parent].append(joint)
        if not self.links:
            raise URDFError("URDF has no links")
        roots = [name for name in self.links if name not in self.parent_joint]
        if not roots:
            cycle_link = next(iter(self.links))
            raise URDFError(f"joints form a cycle through link '{self._on_cycle(cycle_link)}'")
        # a link below no root has a parent chain that never ends: it hangs on a cycle
        reached = {name for root in roots for name in self.subtree(root)}
        for name in self.links:
            if name not in reached:
                raise URDFError(f"joints form a cycle through link '{self._on_cycle(name)}'")
        if len(roots) > 1:
            raise URDFError(f"URDF has several root links (not connected by joints): {roots}")
        self.root = roots[0]

    def _on_cycle(self, link):
        seen = []
        while link not in seen:
            seen.append(link)
            link = self.parent_joint[link].parent
        return link

    def subtree(self, link, stop=()):
        """Links reachable from `link` going down, not crossing the joints named in `stop`."""
        out, todo = [], [link]
        while todo:
            name = todo.pop()
            out.append(name)
            todo.extend(j.child for j in self.child_joints[name] if j.name not in stop)
        return out

    def path(self, root, tip):
        """Joints from link `root` down to link `tip`, in order; error if tip is not below root."""
        joints, link = [], tip
        while link != root:
            joint = self.parent_joint.get(link)
            if joint is None:
                raise URDFError(f"link '{tip}' is not below root link '{root}'")
            joints.append(joint)
            link = joint.parent
        return joints[::-1]

    def default_tip(self, root):
        """End link of the longest path of movable joints below `root`, a hand counting as an
        end (see `hand`); AmbiguousTip when several paths are longest.
        """
        best, ends, hand_below = 0, [], {}
        todo = [(root, 0, None)]
        while todo:
            link, count, end = todo.pop()
            if count > best:
                best, ends = count, [end]
            elif count == best and end is not None and end not in ends:
                ends.append(end)
            if count > 0 and self.hand(link):  # the fingers are locked: the arm ends here
                hand_below[end] = link
                continue
            for j in self.child_joints[link]:
                moves = j.type != "fixed"
                todo.append((j.child, count + moves, j.child if moves else end))
        if best == 0:
            raise URDFError(f"no movable joint below root link '{root}'")
        ends = [hand_below.get(end, end) for end in ends]
        if len(ends) > 1:
            raise AmbiguousTip(sorted(ends), best, self.outline(root))
        return ends[0]

    def hand(self, link):
        """Whether `link` holds a gripper: two or more of its child joints are movable, and
        each starts a branch of at most GRIPPER_JOINTS movable joints in a row.
        """
        fingers = [1 + max(self._branch_depths(j.child), default=0)
                   for j in self.child_joints[link] if j.type != "fixed"]
        return len(fingers) >= 2 and max(fingers) <= GRIPPER_JOINTS

    def _branch_depths(self, link):
        """The most movable joints in a row on each branch that starts at `link` (fixed joints
        are passed through, so a branch starts at the first movable joint).
        """
        depths = []
        for j in self.child_joints[link]:
            if j.type == "fixed":
                depths.extend(self._branch_depths(j.child))
            else:
                depths.append(1 + max(self._branch_depths(j.child), default=0))
        return depths

    def outline(self, root, indent="  "):
        """The tree below `root` as text, one line per movable joint (fixed ones folded into
        their links), indented by depth: what to choose a tip or joints from.
        """
        lines = [root]
        todo = [(j, 1) for j in reversed(self.child_joints[root])]
        while todo:  # depth first, children in URDF order
            j, depth = todo.pop()
            if j.type != "fixed":
                mimic = f", mimics {j.mimic.joint}" if j.mimic is not None else ""
                lines.append(f"{indent * depth}{j.name} ({j.type}{mimic}) -> {j.child}")
            below = depth + (j.type != "fixed")
            todo.extend((child, below) for child in reversed(self.child_joints[j.child]))
        return "\n".join(lines)


# At most this many movable joints in a row on each of two or more branches that start at one
# link make it a hand (a Panda's two fingers: one joint each, one a mimic); more, other arms.
GRIPPER_JOINTS = 2


def _common_ancestor(tree, links):
    """The lowest link that every one of `links` is at or below."""
    lines = []
    for link in links:
        line = [link]
        while line[-1] in tree.parent_joint:
            line.append(tree.parent_joint[line[-1]].parent)
        lines.append(line[::-1])
    common = lines[0]
    for line in lines[1:]:
        k = 0
        while k < min(len(common), len(line)) and common[k] == line[k]:
            k += 1
        common = common[:k]
    return common[-1]


def _children(tree, link, first_tip):
    """The model's joints below `link`, the last tip's first (a stack to pop)."""
    return sorted((j for j in tree.child_joints[link] if j.name in first_tip),
                  key=lambda j: -first_tip[j.name])


def select(tree, root_link, tip_links, joints):
    """-> (root, tips, joints of the model in topological order, fixed ones included), after
    checking names and consistency. The model is the union of the paths from root to each tip;
    its branches come in the order of the tips.
    """
    for role, link in [("root_link", root_link)] + [("tip_link", t) for t in tip_links]:
        if link is not None and link not in tree.links:
            raise URDFError(f"{role} '{link}' is not a link of the URDF")
    if joints is not None:
        joints = list(joints)
        if not joints:
            raise URDFError("joints is empty")
        for name in joints:
            if name not in tree.joints:
                raise URDFError(f"joint '{name}' (in joints) is not a joint of the URDF")
            if tree.joints[name].type == "fixed":
                raise URDFError(f"joint '{name}' (in joints) is fixed")
        root = root_link or _common_ancestor(tree, [tree.joints[j].parent for j in joints])
        if not tip_links:  # the child links of the joints with no other one below them
            above = {j.name for name in joints for j in tree.path(tree.root,
                                                                  tree.joints[name].child)[:-1]}
            tip_links = list(dict.fromkeys(tree.joints[n].child for n in joints if n not in above))
    else:
        root = root_link or tree.root
        tip_links = list(tip_links) or [tree.default_tip(root)]
    paths = [tree.path(root, tip) for tip in tip_links]
    first_tip = {}  # joint -> the first tip whose path it is on
    for k, path in enumerate(paths):
        for j in path:
            first_tip.setdefault(j.name, k)
    where = (f"the path from '{root}' to '{tip_links[0]}'" if len(tip_links) == 1 else
             f"the paths from '{root}' to {', '.join(repr(t) for t in tip_links)}")
    if joints is not None:
        for name in joints:
            if name not in first_tip:
                raise URDFError(f"joint '{name}' (in joints) is not on {where}")
        for path in paths:
            for j in path:
                if j.type != "fixed" and j.name not in joints:
                    raise URDFError(
                        f"joint '{j.name}' ({j.type}) is on the path from '{root}' to "
                        f"'{path[-1].child}' but not in joints")
    order, todo = [], _children(tree, root, first_tip)  # depth first: parents before children
    while todo:
        order.append(todo.pop())
        todo.extend(_children(tree, order[-1].child, first_tip))
    for j in order:
        if j.type in ("floating", "planar"):
            raise URDFError(
                f"joint '{j.name}' is {j.type}: only revolute, continuous, prismatic and fixed "
                f"joints can be in the model (set root_link below it)")
        if j.type != "fixed" and j.mimic is not None:
            raise URDFError(f"joint '{j.name}' mimics joint '{j.mimic.joint}': mimic joints "
                            "cannot be in the model")
    if not any(j.type != "fixed" for j in order):
        raise URDFError(f"no movable joint on {where}")
    return root, tip_links, order


def lump(tree, start, stop, problems, locked):
    """Rigidly lump the subtree of link `start` (not crossing the joints named in `stop`) into
    one body in its frame -> (mass, com, inertia about the com, ((link, R, p), ...) the links'
    poses in it). The movable joints it crosses are appended to `locked`.
    """
    body, links = (0.0, np.zeros(3), np.zeros((3, 3))), []
    todo = [(start, np.eye(3), np.zeros(3))]
    while todo:
        name, R, p = todo.pop()
        links.append((name, R, p))
        m, c, inertia = link_inertial(tree.links[name])
        problems.extend(check_inertia(f"link '{name}'", m, inertia))
        body = combine_bodies(body, (m, R @ c + p, R @ inertia @ R.T))
        for j in tree.child_joints[name]:
            if j.name not in stop:  # joints off the model are taken at their zero position
                if j.type != "fixed":
                    locked.append(j.name)
                todo.append((j.child, *compose((R, p), finite_pose(j.origin, f"joint '{j.name}'"))))
    return (*body, tuple(links))
