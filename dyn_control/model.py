"""URDF -> the controlled joints, a path or a tree, with lumped rigid bodies.

A `Chain` is what the dynamics needs and nothing more: for each controlled joint i, in
topological order (a joint's parent body comes before it),

- its parent body `parent[i]` (Featherstone's lambda(i): i - 1 on a path, -1 for the base),
- the fixed pose of joint i's frame in the parent body's frame (`R0[i]`, `p0[i]`),
- the joint type and unit axis in joint i's frame (which is body i's frame, the URDF child link),
- body i's lumped inertia in its own frame: mass (kg), centre of mass (m), rotational inertia
  about the centre of mass (kg m^2).

Body i is the child link of joint i plus every link that hangs off it without crossing another
controlled joint: fixed children, branches that are not controlled, grippers, sensors and
everything past the tips, all taken rigidly at their joints' zero position (parallel-axis
theorem). Gravity is stored in the base frame (the
root link's frame). No ROS import here: this module is plain numpy plus urdf_parser_py.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from .layout import PRISMATIC, REVOLUTE, Data, pack_model

_MOVABLE = ("revolute", "continuous", "prismatic")
_INERTIA_RTOL = 1e-6  # relative slack of the symmetry / PSD / triangle-inequality checks


class URDFError(ValueError):
    """A URDF that cannot be turned into a chain; the message names the link or joint."""


class AmbiguousTip(URDFError):
    """No single longest path: `ends` (the links where the tied paths of `joints` movable joints
    end) and `outline` (the tree, for a person to choose from). Callers name their own way to
    choose (a node's tip_link or joints, inspect's --tip or --joints)."""

    def __init__(self, ends, joints, outline, how="set tip_link or joints"):
        self.ends, self.joints, self.outline = ends, joints, outline
        super().__init__(f"tip link is ambiguous: {len(ends)} paths of {joints} movable joints "
                         f"end at links {ends}; {how}")

    def choose_with(self, how):
        """The same error, naming another way to choose."""
        return AmbiguousTip(self.ends, self.joints, self.outline, how)


class PayloadError(ValueError):
    """A payload that cannot be carried; the message names the parameter and the value."""


class InertiaWarning(UserWarning):
    """Physically invalid inertia, reported instead of raised when strict=False."""


@dataclass(frozen=True)
class JointInfo:
    """One controlled joint: name, URDF type, unit axis (joint frame) and its limits."""

    name: str
    type: str  # "revolute", "continuous" or "prismatic"
    axis: tuple
    parent_link: str
    child_link: str
    lower: float = -np.inf  # rad or m
    upper: float = np.inf
    effort: float = np.inf  # N m or N
    velocity: float = np.inf  # rad/s or m/s
    damping: float = 0.0  # N m s/rad or N s/m
    friction: float = 0.0  # N m or N


def position_bounds(lower, upper):
    """URDF position limits (n,) -> (min, max) each joint can reach. lower >= upper (a URDF
    leaves both 0 when it gives none) or a continuous joint means no limit: -inf, inf."""
    limited = lower < upper
    return np.where(limited, lower, -np.inf), np.where(limited, upper, np.inf)


def as_limit(values):
    """URDF effort or velocity limits (n,) -> the bound each joint has: a limit of 0 or less (often
    written for "not specified") means none, inf."""
    values = np.asarray(values, dtype=float)
    return np.where(values > 0, values, np.inf)


def to_chain_order(values, order):
    """Per-joint values in command order -> chain order; order[i] is the chain index of the
    i-th commanded joint (the other way is values[order])."""
    out = np.empty_like(values)
    out[order] = values
    return out


@dataclass(frozen=True)
class Chain:
    """n controlled joints, a path or a tree, with lumped bodies; arrays are float64, index i =
    joint i, in topological order.

    parent: (n,) int, body i's parent body (< i), -1 for the base; a path has i - 1.
    R0: (n, 3, 3), p0: (n, 3) m -- pose of joint i's frame in its parent body's frame at q_i = 0.
    axis: (n, 3) unit vectors in joint i's frame; jtype: (n,) REVOLUTE or PRISMATIC.
    mass: (n,) kg; com: (n, 3) m and inertia: (n, 3, 3) kg m^2 about the COM, in body i's frame.
    gravity: (3,) m/s^2 in the base frame. base_rotation: (3, 3) base frame in the URDF root frame.
    tip_links: the ends of the branches (one on a path); tip_link, the one that body n - 1 moves,
    and tip_rotation, tip_offset its pose in body n - 1's frame (f_tip acts there).
    A chain is immutable once built: its fields cannot be reassigned and its arrays are
    read-only (derived arrays are computed once); `with_payload` or dataclasses.replace make a
    new one. To use another gravity, pass `gravity=` to the dynamics functions.
    """

    joints: tuple
    root_link: str
    tip_link: str
    R0: np.ndarray
    p0: np.ndarray
    axis: np.ndarray
    jtype: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    base_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    tip_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # tip link in body n-1
    tip_offset: np.ndarray = field(default_factory=lambda: np.zeros(3))  # m, in body n-1
    link_poses: tuple = ()  # per body, (link name, R (3, 3), p (3,)) of each URDF link in it
    findings: tuple = ()  # validity findings (warnings) for `inspect`
    parent: np.ndarray = None  # (n,) body i's parent body, -1 for the base (a path: i - 1)
    tip_links: tuple = ()  # the ends of the branches; (tip_link,) on a path
    locked_joints: tuple = ()  # movable URDF joints lumped into a body at their zero position

    def __post_init__(self):
        lower, upper = self._limit("lower"), self._limit("upper")  # rad or m
        if self.parent is None:
            object.__setattr__(self, "parent", np.arange(self.n, dtype=np.int64) - 1)
        if not self.tip_links:
            object.__setattr__(self, "tip_links", (self.tip_link,))
        derived = dict(
            base_acceleration=-self.gravity,  # how gravity enters Newton-Euler
            # per-joint arrays (n,), built once: the control and simulation ticks read them
            lower=lower, upper=upper, effort_limits=self._limit("effort"),  # N m or N
            velocity_limits=self._limit("velocity"),  # rad/s or m/s
            damping=self._limit("damping"), friction=self._limit("friction"),
            continuous=np.array([j.type == "continuous" for j in self.joints], dtype=bool),
            # The kernels use the inertia about the body frame origin and the first mass moment.
            h=self.mass[:, None] * self.com,
            inertia_origin=np.array([
                inertia + parallel_axis(m, c)
                for m, c, inertia in zip(self.mass, self.com, self.inertia)
            ]).reshape(-1, 3, 3))
        derived["position_min"], derived["position_max"] = position_bounds(lower, upper)
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        object.__setattr__(self, "vector_shape", (self.n,))  # of q, qd, tau: checked per call
        object.__setattr__(self, "matrix_shape", (self.n, self.n))  # of M
        # the packed arrays the kernels read (dyn_control.layout), built once
        object.__setattr__(self, "pack", pack_model(
            self.R0, self.p0, self.axis, self.h, self.inertia_origin, self.mass,
            self.base_acceleration, self.jtype, self.parent))
        object.__setattr__(self, "_workspaces", threading.local())

    def workspace(self):
        """This thread's workspace (layout.Data) for the public functions: allocated once per
        thread, as a kernel writes into it (a control law or a simulator keeps its own)."""
        try:
            return self._workspaces.data
        except AttributeError:
            self._workspaces.data = Data(self.pack)
            return self._workspaces.data

    @property
    def n(self) -> int:
        return len(self.joints)

    @property
    def lumped_links(self) -> tuple:
        """Per body, the names of the URDF links lumped into it."""
        return tuple(tuple(name for name, _, _ in links) for links in self.link_poses)

    def frame(self, link, what="link"):
        """(body, R (3, 3), p (3,) m): the body that moves `link` (any link the chain moves,
        fixed children included) and the link's fixed pose in that body's frame. ValueError
        names `what` and the link otherwise."""
        for body, links in enumerate(self.link_poses):
            for name, R, p in links:
                if name == link:
                    return body, R, p
        raise ValueError(f"{what} '{link}' is not a link the chain moves (links: "
                         f"{', '.join(name for links in self.lumped_links for name in links)})")

    def with_payload(self, mass, com=(0.0, 0.0, 0.0), inertia=(0.0,) * 6, link=None):
        """A new chain carrying a rigid payload fixed to `link` (default: the tip link).

        mass: kg. com: (3,) m, the payload's centre of mass in `link`'s frame. inertia: (ixx,
        iyy, izz, ixy, ixz, iyz) kg m^2 about that centre of mass, in `link`'s axes. The
        payload is lumped into the body that carries `link`, as the loader lumps fixed links.
        Mass 0 means no payload (com and inertia are then ignored): the result equals this
        chain. This chain is unchanged. Raises PayloadError naming the bad value.
        """
        mass, com, inertia, link = check_payload(self, mass, com, inertia, link)
        if mass == 0.0:
            return replace(self)
        body, R, p = self.frame(link)
        masses, coms, inertias = self.mass.copy(), self.com.copy(), self.inertia.copy()
        masses[body], coms[body], inertias[body] = combine_bodies(
            (masses[body], coms[body], inertias[body]), (mass, R @ com + p, R @ inertia @ R.T))
        return replace(self, mass=masses, com=coms, inertia=inertias)

    @property
    def joint_names(self) -> list:
        return [j.name for j in self.joints]

    def _limit(self, name):
        return np.array([getattr(j, name) for j in self.joints], dtype=float)

    def wrench_at_last_body(self, f_tip):
        """(6,) wrench [force; moment] in the tip link frame about its origin -> same wrench in
        body n-1's frame about that body's origin."""
        f_tip = np.asarray(f_tip, dtype=float).reshape(6)
        force = self.tip_rotation @ f_tip[:3]
        moment = self.tip_rotation @ f_tip[3:] + np.cross(self.tip_offset, force)
        return np.concatenate([force, moment])

    def gravity_in_base(self, gravity):
        """Gravity given in the URDF root frame -> (3,) in the base frame."""
        return self.base_rotation.T @ np.asarray(gravity, dtype=float).reshape(3)


# ---------------------------------------------------------------- small geometry helpers


def rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw -> rotation matrix R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _pose(origin):
    """urdf_parser_py Pose (or None) -> (R, p)."""
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    return rpy_matrix(rpy), np.array(xyz, dtype=float)


def _finite_pose(origin, what):
    """_pose, or URDFError naming `what` when the origin holds non-finite numbers."""
    with np.errstate(invalid="ignore"):  # cos(inf): reported below as a URDFError
        R, p = _pose(origin)
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise URDFError(f"{what} has a non-finite origin (xyz {origin.xyz}, rpy {origin.rpy})")
    return R, p


def _compose(a, b):
    """Pose b given in frame a -> pose in a's parent frame."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


# ---------------------------------------------------------------- parsing


def _read_urdf_text(source) -> str:
    """A path (.urdf or .xacro) or an XML string -> URDF XML text."""
    text = str(source)
    if text.lstrip().startswith("<"):
        return text
    if not os.path.isfile(text):
        raise URDFError(f"URDF file not found: {text!r}")
    if text.endswith(".xacro"):
        try:
            import xacro
        except ImportError as err:  # pragma: no cover - xacro is a declared dependency
            raise URDFError(f"cannot expand {text!r}: the xacro package is not installed") from err
        try:
            return xacro.process_file(text).toprettyxml(indent="  ")
        except Exception as err:  # xacro raises many types; report them as one
            if "AMENT_PREFIX_PATH" in str(err):  # $(find pkg) outside a ROS install
                raise URDFError(
                    f"xacro failed on {text!r}: its $(find ...) needs a ROS install that has the "
                    "package (AMENT_PREFIX_PATH is not set here): source that install, or expand "
                    f"the xacro where it is (xacro {os.path.basename(text)} > robot.urdf) and "
                    "load the URDF") from None
            raise URDFError(f"xacro failed on {text!r}: {err}") from err
    with open(text, encoding="utf-8") as f:
        return f.read()


# What the dynamics reads of a URDF; everything else (visuals, materials, transmissions in
# either format, <gazebo>, <ros2_control>, sensors, vendor tags) is dropped before parsing, so a
# tag urdf_parser_py does not know, or knows more strictly than urdfdom, cannot stop the load.
_KEEP = {"link": {"inertial"}, "joint": {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic"}}


def _dynamics_only(text: str) -> bytes:
    """URDF XML -> the same robot with only links' <inertial> and joints' kinematic tags."""
    from xml.etree import ElementTree

    try:
        robot = ElementTree.fromstring(text.encode("utf-8"))
    except ElementTree.ParseError as err:
        raise URDFError(f"cannot parse URDF: {err}") from err
    if robot.tag != "robot":
        raise URDFError(f"cannot parse URDF: root element is <{robot.tag}>, not <robot>")
    for attr in list(robot.attrib):
        if attr != "name":
            del robot.attrib[attr]
    for element in list(robot):
        keep = _KEEP.get(element.tag)
        if keep is None:
            robot.remove(element)
            continue
        for child in list(element):
            if child.tag not in keep:
                element.remove(child)
    return ElementTree.tostring(robot)


def _parse(text: str):
    """URDF XML -> urdf_parser_py Robot, quietly."""
    from urdf_parser_py import urdf
    from urdf_parser_py.xml_reflection import core

    xml = _dynamics_only(text)
    notes = []
    saved = core.on_error
    core.on_error = notes.append
    try:
        return urdf.URDF.from_xml_string(xml)
    except Exception as err:  # ParseError, ValueError, TypeError ... on malformed values
        msg = " ".join(str(err).split())
        raise URDFError(f"cannot parse URDF: {msg}") from err
    finally:
        core.on_error = saved


def _check_inertia(what, mass, inertia):
    """Return a list of problems with one body's inertial data (empty if valid); `what` names
    the body in the messages ("link 'x'")."""
    problems = []
    if not np.isfinite(mass) or not np.all(np.isfinite(inertia)):
        return [f"{what}: non-finite mass or inertia (mass={mass}, inertia={inertia.tolist()})"]
    if mass < 0:
        problems.append(f"{what}: negative mass {mass:g} kg")
    scale = max(np.abs(inertia).max(), 1e-12)
    if np.abs(inertia - inertia.T).max() > _INERTIA_RTOL * scale:
        problems.append(f"{what}: inertia tensor not symmetric: {inertia.tolist()}")
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if eig[0] < -_INERTIA_RTOL * scale:
        problems.append(
            f"{what}: inertia tensor not positive semi-definite, "
            f"principal moments {np.round(eig, 12).tolist()}")
    elif eig[0] + eig[1] < eig[2] - _INERTIA_RTOL * scale:
        problems.append(
            f"{what}: principal moments {np.round(eig, 12).tolist()} break the triangle "
            f"inequality I1 + I2 >= I3 ({eig[0] + eig[1]:.6g} < {eig[2]:.6g})")
    return problems


def parallel_axis(mass, d):
    """(3, 3) kg m^2 to add to an inertia about the centre of mass to take it about a point at
    -d from it (d (3,) m, the com seen from that point): m (|d|^2 I - d d^T)."""
    return mass * (d @ d * np.eye(3) - np.outer(d, d))


def combine_bodies(a, b):
    """Two rigid bodies (mass kg, com (3,) m, inertia (3, 3) about the com), both in one frame
    -> the one rigid body they make, in that frame (parallel-axis theorem)."""
    (m1, c1, I1), (m2, c2, I2) = a, b
    mass = m1 + m2
    com = (m1 * c1 + m2 * c2) / mass if mass > 0 else np.zeros(3)
    inertia = I1 + I2
    for m, c in ((m1, c1), (m2, c2)):
        inertia = inertia + parallel_axis(m, c - com)
    return mass, com, 0.5 * (inertia + inertia.T)


def inertia_matrix(ixx, iyy, izz, ixy, ixz, iyz):
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def check_payload(chain, mass, com, inertia, link):
    """Validated (mass, com (3,), inertia (3, 3), link name) of a payload for `chain`;
    PayloadError naming the parameter (payload_mass, _com, _inertia, _link) and value."""
    try:
        mass = float(mass)
        com = np.array(com, dtype=float).reshape(-1)
        values = np.array(inertia, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise PayloadError(f"payload values must be numbers: {err}") from err
    if not (np.isfinite(mass) and mass >= 0):
        raise PayloadError(f"payload_mass must be finite and >= 0 kg, got {mass}")
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise PayloadError(f"payload_com must be 3 finite values (m), got {com.tolist()}")
    if values.shape != (6,):
        raise PayloadError("payload_inertia must be 6 values (ixx, iyy, izz, ixy, ixz, iyz), "
                           f"got {values.tolist()}")
    inertia = inertia_matrix(*values)
    problems = _check_inertia("payload_inertia", mass, inertia)
    if problems:
        raise PayloadError(problems[0])
    link = chain.tip_link if link is None or link == "" else link
    try:
        chain.frame(link, "payload_link")
    except ValueError as err:
        raise PayloadError(str(err)) from None
    return mass, com, inertia, link


def _link_inertial(link):
    """(mass, com (3,), inertia about com (3, 3)) in the link frame; no <inertial> -> zeros."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mass = float(inertial.mass) if inertial.mass is not None else 0.0
    inertia = np.zeros((3, 3))
    i = inertial.inertia
    if i is not None:
        inertia = inertia_matrix(*(float(v or 0.0) for v in (i.ixx, i.iyy, i.izz, i.ixy, i.ixz, i.iyz)))
    R, p = _finite_pose(inertial.origin, f"link '{link.name}' <inertial>")
    return mass, p, R @ inertia @ R.T


class _Tree:
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
        end (see `hand`); AmbiguousTip when several paths are longest."""
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
        each starts a branch of at most GRIPPER_JOINTS movable joints in a row."""
        fingers = [1 + max(self._branch_depths(j.child), default=0)
                   for j in self.child_joints[link] if j.type != "fixed"]
        return len(fingers) >= 2 and max(fingers) <= GRIPPER_JOINTS

    def _branch_depths(self, link):
        """The most movable joints in a row on each branch that starts at `link` (fixed joints
        are passed through, so a branch starts at the first movable joint)."""
        depths = []
        for j in self.child_joints[link]:
            if j.type == "fixed":
                depths.extend(self._branch_depths(j.child))
            else:
                depths.append(1 + max(self._branch_depths(j.child), default=0))
        return depths

    def outline(self, root, indent="  "):
        """The tree below `root` as text, one line per movable joint (fixed ones folded into
        their links), indented by depth: what to choose a tip or joints from."""
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


def _select(tree, root_link, tip_links, joints):
    """-> (root, tips, joints of the model in topological order, fixed ones included), after
    checking names and consistency. The model is the union of the paths from root to each tip;
    its branches come in the order of the tips."""
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
            above = {j.name for name in joints for j in tree.path(tree.root, tree.joints[name].child)[:-1]}
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


def _joint_info(j):
    axis = np.array(j.axis if j.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = np.linalg.norm(axis)
    if not np.isfinite(norm) or norm < 1e-12:
        raise URDFError(f"joint '{j.name}' has a zero or invalid axis {axis.tolist()}")
    axis = axis / norm
    lim, dyn = j.limit, j.dynamics

    def value(obj, name, default):
        v = getattr(obj, name, None) if obj is not None else None
        return default if v is None else float(v)

    lower, upper = -np.inf, np.inf
    if j.type != "continuous" and lim is not None:
        lower, upper = value(lim, "lower", 0.0), value(lim, "upper", 0.0)
    limits = dict(lower=lower, upper=upper, effort=value(lim, "effort", np.inf),
                  velocity=value(lim, "velocity", np.inf), damping=value(dyn, "damping", 0.0),
                  friction=value(dyn, "friction", 0.0))
    bad = [f"{k}={v}" for k, v in limits.items() if np.isnan(v)]
    if bad:
        raise URDFError(f"joint '{j.name}' has a NaN limit or dynamics value: {', '.join(bad)}")
    info = JointInfo(
        name=j.name, type=j.type, axis=tuple(axis), parent_link=j.parent, child_link=j.child,
        lower=lower, upper=upper,
        effort=value(lim, "effort", np.inf), velocity=value(lim, "velocity", np.inf),
        damping=value(dyn, "damping", 0.0), friction=value(dyn, "friction", 0.0))
    return info, axis


def _lump(tree, start, stop, problems, locked):
    """Rigidly lump the subtree of link `start` (not crossing the joints named in `stop`) into
    one body in its frame -> (mass, com, inertia about the com, ((link, R, p), ...) the links'
    poses in it). The movable joints it crosses are appended to `locked`."""
    body, links = (0.0, np.zeros(3), np.zeros((3, 3))), []
    todo = [(start, np.eye(3), np.zeros(3))]
    while todo:
        name, R, p = todo.pop()
        links.append((name, R, p))
        m, c, inertia = _link_inertial(tree.links[name])
        problems.extend(_check_inertia(f"link '{name}'", m, inertia))
        body = combine_bodies(body, (m, R @ c + p, R @ inertia @ R.T))
        for j in tree.child_joints[name]:
            if j.name not in stop:  # joints off the model are taken at their zero position
                if j.type != "fixed":
                    locked.append(j.name)
                todo.append((j.child, *_compose((R, p), _finite_pose(j.origin, f"joint '{j.name}'"))))
    return (*body, tuple(links))


def load_chain(source, root_link=None, tip_link=None, joints=None,
               gravity=(0.0, 0.0, -9.81), strict=True, tip_links=None) -> Chain:
    """Build a `Chain` from a URDF file path, a .xacro file or a URDF XML string.

    root_link: base of the model (default: the URDF root, or with joints the lowest link above
    all of them). tip_link: end of a path (default: end of the longest path of movable joints;
    where the longest paths part only below one link, into branches of at most GRIPPER_JOINTS
    movable joints each, a gripper's fingers, that link: the fingers are locked at their zero
    position and lumped into its body, and chain.locked_joints names them);
    tip_links: the ends of several branches, a tree. joints: the controlled joints (ros2_control
    style): every movable joint on the paths from the root to the tips (default: the child
    links of the joints that have none of the others below them). Bodies are in topological
    order, branch after branch in the order of the tips, and chain.joint_names follows it.
    gravity: (3,) m/s^2 in the URDF root link's frame. strict=False turns physically invalid
    inertia from an error into an InertiaWarning.
    Raises URDFError naming the offending link or joint.
    """
    if tip_link is not None and tip_links:
        raise URDFError("set tip_link or tip_links, not both")
    tree = _Tree(_parse(_read_urdf_text(source)))
    tips = list(tip_links or ([] if tip_link is None else [tip_link]))
    root, tips, order = _select(tree, root_link, tips, joints)
    movable = [j for j in order if j.type != "fixed"]

    infos, axes, R0, p0, parent = [], [], [], [], []
    body_of = {root: -1}  # link -> the body it is the frame of
    for j in movable:
        line, link = [j], j.parent  # the fixed joints from the parent body down to j, and j
        while link not in body_of:
            line.append(tree.parent_joint[link])
            link = line[-1].parent
        pose = (np.eye(3), np.zeros(3))
        for fixed in line[::-1]:
            pose = _compose(pose, _finite_pose(fixed.origin, f"joint '{fixed.name}'"))
        info, axis = _joint_info(j)
        infos.append(info)
        axes.append(axis)
        R0.append(pose[0])
        p0.append(pose[1])
        parent.append(body_of[link])
        body_of[j.child] = len(infos) - 1

    problems, masses, coms, inertias, lumped, locked = [], [], [], [], [], []
    stop = {j.name for j in movable}
    for j in movable:
        m, c, inertia, links = _lump(tree, j.child, stop, problems, locked)
        masses.append(m)
        coms.append(c)
        inertias.append(inertia)
        lumped.append(links)
    problems = list(dict.fromkeys(problems))
    if problems and strict:
        raise URDFError(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    for problem in problems:
        warnings.warn(problem, InertiaWarning, stacklevel=2)

    # the tip of the last body: f_tip's frame (the last tip whose path runs through it)
    last = movable[-1]
    tip = [t for t in tips if last in tree.path(root, t)][-1]
    _, tip_rotation, tip_offset = next(link for link in lumped[-1] if link[0] == tip)

    base_rotation = np.eye(3)
    for j in tree.path(tree.root, root):  # joints above the model are taken at zero position
        base_rotation = base_rotation @ _finite_pose(j.origin, f"joint '{j.name}'")[0]
    gravity = np.asarray(gravity, dtype=float).reshape(3)
    if not np.all(np.isfinite(gravity)):
        raise URDFError(f"gravity must be finite, got {gravity.tolist()}")

    return Chain(
        joints=tuple(infos), root_link=root, tip_link=tip,
        R0=np.array(R0), p0=np.array(p0), axis=np.array(axes),
        jtype=np.array([PRISMATIC if i.type == "prismatic" else REVOLUTE for i in infos], dtype=np.int64),
        mass=np.array(masses), com=np.array(coms), inertia=np.array(inertias),
        gravity=base_rotation.T @ gravity, base_rotation=base_rotation,
        tip_rotation=tip_rotation, tip_offset=tip_offset,
        link_poses=tuple(lumped), findings=tuple(problems),
        parent=np.array(parent, dtype=np.int64), tip_links=tuple(tips),
        locked_joints=tuple(locked))
