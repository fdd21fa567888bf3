"""The model: URDF -> the controlled joints, a path or a tree, with lumped rigid bodies.

Its homes: reading the URDF (urdf.py), choosing the joints and lumping the links into bodies
(tree.py), inertia algebra (inertia.py); here the model type itself, with its frames and its
payload, and load_chain, which puts them together. A `Chain` is what the dynamics needs and nothing
more: for each controlled joint i, in topological order (a joint's parent body comes before it),

- its parent body `parent[i]` (Featherstone's lambda(i): i - 1 on a path, -1 for the base),
- the fixed pose of joint i's frame in the parent body's frame (`R0[i]`, `p0[i]`),
- the joint type and unit axis in joint i's frame (which is body i's frame, the URDF child link),
- body i's lumped inertia in its own frame: mass (kg), centre of mass (m), rotational inertia
  about the centre of mass (kg m^2).

Body i is the child link of joint i plus every link that hangs off it without crossing another
controlled joint: fixed children, branches that are not controlled, grippers, sensors and
everything past the tips, all taken rigidly at their joints' zero position (parallel-axis
theorem). Gravity is stored in the base frame (the root link's frame). The model owns the
packed arrays the compiled kernels read (layout.py), and a workspace per thread. No ROS import
here: plain numpy plus urdf_parser_py.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from dyn_control.model.inertia import check_inertia, combine_bodies, inertia_matrix, parallel_axis
from dyn_control.model.layout import PRISMATIC, REVOLUTE, Data, pack_model
from dyn_control.model.tree import AmbiguousTip, Tree, lump, select  # noqa: F401 (AmbiguousTip: exported)
from dyn_control.model.urdf import URDFError, compose, finite_pose, parse, read_urdf_text

__all__ = ["AmbiguousTip", "Chain", "InertiaWarning", "JointInfo", "PayloadError", "URDFError",
           "load_chain"]


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
    leaves both 0 when it gives none) or a continuous joint means no limit: -inf, inf.
    """
    limited = lower < upper
    return np.where(limited, lower, -np.inf), np.where(limited, upper, np.inf)


def as_limit(values):
    """URDF effort or velocity limits (n,) -> the bound each joint has: a limit of 0 or less (often
    written for "not specified") means none, inf.
    """
    values = np.asarray(values, dtype=float)
    return np.where(values > 0, values, np.inf)


def effort_limits(chain, override=None):
    """(n,) N m or N: the URDF effort limits, or `override` (one per joint) when given (None or
    empty: not given); 0 means none (as_limit).
    """
    given = override is not None and len(override) > 0
    limits = np.asarray(override, dtype=float) if given else chain.effort_limits
    if limits.shape != (chain.n,) or np.any(np.isnan(limits)) or np.any(limits < 0):
        raise ValueError(f"effort_limits must be {chain.n} values >= 0, "
                         f"got {np.asarray(override).tolist()}")
    return as_limit(limits)


def to_chain_order(values, order):
    """Per-joint values in command order -> chain order; order[i] is the chain index of the
    i-th commanded joint (the other way is values[order]).
    """
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
    limit_findings: tuple = ()  # (joint, one line) per joint whose URDF limits are not limits
    parent: np.ndarray = None  # (n,) body i's parent body, -1 for the base (a path: i - 1)
    tip_links: tuple = ()  # the ends of the branches; (tip_link,) on a path
    locked_joints: tuple = ()  # movable URDF joints lumped into a body at their zero position

    def __post_init__(self):
        lower, upper = self._limit("lower"), self._limit("upper")  # rad or m
        if self.parent is None:
            object.__setattr__(self, "parent", np.arange(self.n, dtype=np.int64) - 1)
        if not self.tip_links:
            object.__setattr__(self, "tip_links", (self.tip_link,))
        derived = {
            "base_acceleration": -self.gravity,  # how gravity enters Newton-Euler
            # per-joint arrays (n,), built once: the control and simulation ticks read them
            "lower": lower, "upper": upper, "effort_limits": self._limit("effort"),  # N m or N
            "velocity_limits": self._limit("velocity"),  # rad/s or m/s
            "damping": self._limit("damping"), "friction": self._limit("friction"),
            "continuous": np.array([j.type == "continuous" for j in self.joints], dtype=bool),
            # The kernels use the inertia about the body frame origin and the first mass moment.
            "h": self.mass[:, None] * self.com,
            "inertia_origin": np.array([
                inertia + parallel_axis(m, c)
                for m, c, inertia in zip(self.mass, self.com, self.inertia)
            ]).reshape(-1, 3, 3)}
        derived["position_min"], derived["position_max"] = position_bounds(lower, upper)
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        object.__setattr__(self, "vector_shape", (self.n,))  # of q, qd, tau: checked per call
        object.__setattr__(self, "matrix_shape", (self.n, self.n))  # of M
        # the packed arrays the kernels read (dyn_control.model.layout), built once
        object.__setattr__(self, "pack", pack_model(
            self.R0, self.p0, self.axis, self.h, self.inertia_origin, self.mass,
            self.base_acceleration, self.jtype, self.parent))
        object.__setattr__(self, "_workspaces", threading.local())
        object.__setattr__(self, "_frames", {  # frame()'s answers: a kinematics call asks each time
            name: (body, R, p) for body, links in enumerate(self.link_poses)
            for name, R, p in links})

    @property
    def entry(self):
        """The C entry points of inverse_dynamics and mass_matrix (kernels.entry), made at the
        first call that needs them: they load the compiled passes.
        """
        try:
            return self._entry
        except AttributeError:
            from dyn_control.kernels.entry import entry
            object.__setattr__(self, "_entry", entry(self.pack))
            return self._entry

    def workspace(self):
        """This thread's workspace (layout.Data) for the public functions: allocated once per
        thread, as a kernel writes into it (a control law or a simulator keeps its own).
        """
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
        names `what` and the link otherwise.
        """
        try:
            return self._frames[link]
        except (KeyError, TypeError):  # TypeError: not a name
            pass
        raise ValueError(f"{what} '{link}' is not a link the chain moves (links: "
                         f"{', '.join(name for links in self.lumped_links for name in links)})")

    def frame_arrays(self, links):
        """(bodies (k,) int, R (k, 3, 3), p (k, 3)): frame() of each of `links`, as the compiled
        kernels that visit several frames take them.
        """
        frames = [self.frame(link) for link in links]
        return (np.array([body for body, _, _ in frames], dtype=np.int64),
                np.array([R for _, R, _ in frames], dtype=float).reshape(-1, 3, 3),
                np.array([p for _, _, p in frames], dtype=float).reshape(-1, 3))

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
        body n-1's frame about that body's origin.
        """
        f_tip = np.asarray(f_tip, dtype=float).reshape(6)
        force = self.tip_rotation @ f_tip[:3]
        moment = self.tip_rotation @ f_tip[3:] + np.cross(self.tip_offset, force)
        return np.concatenate([force, moment])

    def gravity_in_base(self, gravity):
        """Gravity given in the URDF root frame -> (3,) in the base frame."""
        return self.base_rotation.T @ np.asarray(gravity, dtype=float).reshape(3)


def check_payload(chain, mass, com, inertia, link):
    """Validated (mass, com (3,), inertia (3, 3), link name) of a payload for `chain`;
    PayloadError naming the parameter (payload_mass, _com, _inertia, _link) and value.
    """
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
    problems = check_inertia("payload_inertia", mass, inertia)
    if problems:
        raise PayloadError(problems[0])
    link = chain.tip_link if link is None or link == "" else link
    try:
        chain.frame(link, "payload_link")
    except ValueError as err:
        raise PayloadError(str(err)) from None
    return mass, com, inertia, link


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
    limits = {"lower": lower, "upper": upper, "effort": value(lim, "effort", np.inf),
              "velocity": value(lim, "velocity", np.inf), "damping": value(dyn, "damping", 0.0),
              "friction": value(dyn, "friction", 0.0)}
    bad = [f"{k}={v}" for k, v in limits.items() if np.isnan(v)]
    if bad:
        raise URDFError(f"joint '{j.name}' has a NaN limit or dynamics value: {', '.join(bad)}")
    info = JointInfo(name=j.name, type=j.type, axis=tuple(axis), parent_link=j.parent,
                     child_link=j.child, **limits)
    return info, axis


UNLIMITED_HINT = ("fix the URDF, or name the joint in the nodes' unlimited_joints parameter to "
                  "run it without the limits its URDF does not give")


def refused_limits(chain, unlimited=()):
    """One line for the first of chain's joints whose URDF limits are not limits
    (limit_problem) and which `unlimited` does not name, with the count of the others and
    how to go on; None when every such joint is named.
    """
    refused = [line for joint, line in chain.limit_findings if joint not in unlimited]
    if not refused:
        return None
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    return f"{refused[0]}{more}: {UNLIMITED_HINT}"


def limit_problem(j, info):
    """One line naming what is wrong with joint j's URDF limits (info: its JointInfo), or None.
    A revolute or prismatic joint needs a <limit> (the URDF spec's rule) whose lower is below
    its upper, both finite; every movable joint needs a finite effort and velocity over 0.
    Where one is not, the joint has no such limit (position_bounds, as_limit): a URDF may mean
    "not specified" by 0, but may as well hold a typo, so it is said, never assumed.
    """
    if j.limit is None:
        if j.type == "continuous":
            return f"joint '{j.name}' (continuous) has no <limit>: no effort or velocity limit"
        return f"joint '{j.name}' ({j.type}) has no <limit>: no position, effort or velocity limit"
    bad = []
    if j.type != "continuous":
        lower, upper = info.lower, info.upper
        if not (np.isfinite(lower) and np.isfinite(upper)):
            bad.append(f"position limits {lower:g} to {upper:g} are not finite")
        elif lower > upper:
            bad.append(f"lower {lower:g} is above upper {upper:g}")
        elif lower == upper:
            bad.append(f"lower = upper = {lower:g}, no range")
    for name, unit in (("effort", "N m or N"), ("velocity", "rad/s or m/s")):
        value = getattr(info, name)
        if getattr(j.limit, name, None) is None:
            bad.append(f"no {name} limit")
        elif not (np.isfinite(value) and value > 0):
            bad.append(f"{name} {value:g} is not a limit")
    return f"joint '{j.name}': {'; '.join(bad)}" if bad else None


def _massless_joints(movable, parent, masses, inertias, lumped):
    """A problem line for each joint that moves nothing: its body and every body below it have
    no mass and no inertia (links without <inertial>), so M has a zero row and no solver,
    node or simulator can use the chain.
    """
    n = len(movable)
    carried = [masses[i] > 0.0 or np.abs(inertias[i]).max() > 0.0 for i in range(n)]
    for i in range(n - 1, -1, -1):  # bodies are in topological order: children come later
        if carried[i] and parent[i] >= 0:
            carried[parent[i]] = True
    return [f"joint '{movable[i].name}' moves no mass: its link '{lumped[i][0][0]}' and every "
            "link below it have no <inertial> (the mass matrix would be singular)"
            for i in range(n) if not carried[i]]


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
    tree = Tree(parse(read_urdf_text(source)))
    tips = list(tip_links or ([] if tip_link is None else [tip_link]))
    root, tips, order = select(tree, root_link, tips, joints)
    movable = [j for j in order if j.type != "fixed"]

    infos, axes, R0, p0, parent, limit_problems = [], [], [], [], [], []
    body_of = {root: -1}  # link -> the body it is the frame of
    for j in movable:
        line, link = [j], j.parent  # the fixed joints from the parent body down to j, and j
        while link not in body_of:
            line.append(tree.parent_joint[link])
            link = line[-1].parent
        pose = (np.eye(3), np.zeros(3))
        for fixed in line[::-1]:
            pose = compose(pose, finite_pose(fixed.origin, f"joint '{fixed.name}'"))
        info, axis = _joint_info(j)
        problem = limit_problem(j, info)
        if problem:
            limit_problems.append((j.name, problem))
        infos.append(info)
        axes.append(axis)
        R0.append(pose[0])
        p0.append(pose[1])
        parent.append(body_of[link])
        body_of[j.child] = len(infos) - 1

    problems, masses, coms, inertias, lumped, locked = [], [], [], [], [], []
    stop = {j.name for j in movable}
    for j in movable:
        m, c, inertia, links = lump(tree, j.child, stop, problems, locked)
        masses.append(m)
        coms.append(c)
        inertias.append(inertia)
        lumped.append(links)
    problems += _massless_joints(movable, parent, masses, inertias, lumped)
    problems = list(dict.fromkeys(problems))
    if problems and strict:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise URDFError(problems[0] + more)
    for problem in problems:
        warnings.warn(problem, InertiaWarning, stacklevel=2)

    # the tip of the last body: f_tip's frame (the last tip whose path runs through it)
    last = movable[-1]
    tip = [t for t in tips if last in tree.path(root, t)][-1]
    _, tip_rotation, tip_offset = next(link for link in lumped[-1] if link[0] == tip)

    base_rotation = np.eye(3)
    for j in tree.path(tree.root, root):  # joints above the model are taken at zero position
        base_rotation = base_rotation @ finite_pose(j.origin, f"joint '{j.name}'")[0]
    gravity = np.asarray(gravity, dtype=float).reshape(3)
    if not np.all(np.isfinite(gravity)):
        raise URDFError(f"gravity must be finite, got {gravity.tolist()}")

    return Chain(
        joints=tuple(infos), root_link=root, tip_link=tip,
        R0=np.array(R0), p0=np.array(p0), axis=np.array(axes),
        jtype=np.array([PRISMATIC if i.type == "prismatic" else REVOLUTE for i in infos],
                       dtype=np.int64),
        mass=np.array(masses), com=np.array(coms), inertia=np.array(inertias),
        gravity=base_rotation.T @ gravity, base_rotation=base_rotation,
        tip_rotation=tip_rotation, tip_offset=tip_offset,
        link_poses=tuple(lumped), findings=tuple(problems), limit_findings=tuple(limit_problems),
        parent=np.array(parent, dtype=np.int64), tip_links=tuple(tips),
        locked_joints=tuple(locked))
