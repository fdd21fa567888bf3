"""The controller's settings, from its parameters: frozen dataclasses whose fields are the keyword
arguments of the stage that takes them (JointLaw: control.ControlLaw's; Cartesian:
cartesian.CartesianLaw's). Per-joint arrays are in chain order. `controller_settings` builds them
from the node's parameters, after the parameter table's checks; a setting changed at run time is
a new ControllerSettings (dataclasses.replace), never an edit.
"""

from dataclasses import dataclass

import numpy as np

from dyn_control.controller import barriers, goals
from dyn_control.controller.cartesian import per_frame
from dyn_control.controller.laws import check_gains, critical_damping, rate_limits
from dyn_control.model.chain import Chain, effort_limits
from dyn_control.parameters import MODES, gain_vector, payload_model, unset


@dataclass(frozen=True, eq=False)
class JointLaw:
    """control.ControlLaw's keyword arguments (its mode: the controller's joint mode, or
    computed_torque while the controller is in cartesian_impedance).
    """

    mode: str
    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    integral_limit: np.ndarray
    friction_compensation: bool
    friction_deadband: float
    period: float


@dataclass(frozen=True, eq=False)
class Cartesian:
    """cartesian.CartesianLaw's keyword arguments, but the limits and friction ones, which the
    joint law shares (ControllerSettings).
    """

    ee_link: tuple
    stiffness: np.ndarray
    damping: np.ndarray  # None: critical
    nullspace_stiffness: np.ndarray
    nullspace_damping: np.ndarray  # None: critical
    operational_space: bool
    max_pose_error: np.ndarray


@dataclass(frozen=True, eq=False)
class Goals:
    """How goals are taken (goals.py, JTC's semantics)."""

    tolerances: goals.Tolerances
    trajectory_check: str  # "off", "warn" or "reject"
    interpolate_from_desired_state: bool
    allow_partial_joints_goal: bool
    allow_nonzero_velocity_at_trajectory_end: bool


@dataclass(frozen=True, eq=False)
class Contact:
    """The observe stage's (controller.contact): the observer gain K_O (1/s), the contact and
    collision levels per joint (N m or N, 0: not checked) and at each ee_link (N), the reaction
    to a collision, and comply's damping (1/s, per joint).
    """

    observer_gain: float
    joint_torque_contact: np.ndarray
    joint_torque_collision: np.ndarray
    force_contact: float
    force_collision: float
    reaction: str  # "hold", "comply" or "none"
    comply_damping: np.ndarray


def contact_settings(chain, p):
    """Contact from the parameters, or None when external_torque.enabled is false. ValueError
    when a collision level is below its contact level (Franka's lower <= upper).
    """
    if not p.external_torque.enabled:
        return None
    c = p.collision
    for name, low, high in zip(chain.joint_names, c.joint_torque_contact,
                               c.joint_torque_collision):
        if 0 < high < low:
            raise ValueError(f"collision.joint_torque_collision on {name}: {high:g} is below "
                             f"collision.joint_torque_contact {low:g}")
    if 0 < c.force_collision < c.force_contact:
        raise ValueError(f"collision.force_collision: {c.force_collision:g} N is below "
                         f"collision.force_contact {c.force_contact:g} N")
    return Contact(observer_gain=float(p.external_torque.observer_gain),
                   joint_torque_contact=c.joint_torque_contact,
                   joint_torque_collision=c.joint_torque_collision,
                   force_contact=float(c.force_contact), force_collision=float(c.force_collision),
                   reaction=c.reaction, comply_damping=c.comply_damping)


@dataclass(frozen=True, eq=False)
class Limits:
    """The guard stage's (controller.guard, dyn_control.controller.barriers): per joint (n,) the
    margin (rad or m, 0: none), the barrier's stiffness (1/s^2) and damping (1/s); the velocity
    fraction and damping (1/s); per ee_link (f, 3) the walls' box (m, base frame, +-inf: none) and
    their margin (m), stiffness (N/m) and damping (N s/m). enabled false: none of it.
    """

    enabled: bool
    position_margin: np.ndarray
    position_stiffness: np.ndarray
    position_damping: np.ndarray
    velocity_fraction: float
    velocity_damping: float
    workspace_min: np.ndarray
    workspace_max: np.ndarray
    workspace_margin: float
    workspace_stiffness: float
    workspace_damping: float


def walls(limits, frames):
    """(low, high), each (frames, 3) m, from limits.workspace_min/max (3 values, the same box
    for every ee_link, or 3 per ee_link; unset: no wall). ValueError names a bad value.
    """
    boxes = []
    for name, given, fill in (("limits.workspace_min", limits.workspace_min, -np.inf),
                              ("limits.workspace_max", limits.workspace_max, np.inf)):
        if unset(given):
            boxes.append(np.full((frames, 3), fill))
            continue
        box = np.asarray(given, dtype=float).reshape(-1)
        if box.size not in (3, 3 * frames) or np.isnan(box).any():
            raise ValueError(f"{name} must be 3 values (x, y, z m) or 3 per ee_link, got "
                             f"{box.tolist()}")
        boxes.append(np.broadcast_to(box.reshape(-1, 3), (frames, 3)).copy())
    low, high = boxes
    bad = np.argwhere(low >= high)
    if bad.size:
        k, axis = bad[0]
        raise ValueError(f"limits.workspace_min {low[k].tolist()} is not below limits."
                         f"workspace_max {high[k].tolist()} in {'xyz'[axis]}")
    return low, high


def limits_settings(chain, limits, frames):
    """Limits from the parameters (`limits`: their group); ValueError names a margin over half
    its joint's range or a box whose min is not below its max.
    """
    margin = (barriers.default_margins(chain) if limits.position_margin is None
              else limits.position_margin)
    margin = np.where(np.isfinite(chain.position_max - chain.position_min), margin, 0.0)
    barriers.check_margins(chain, margin)
    stiffness = limits.position_stiffness
    damping = (2.0 * np.sqrt(stiffness) if limits.position_damping is None
               else limits.position_damping)
    low, high = walls(limits, frames)
    return Limits(
        enabled=bool(limits.enabled), position_margin=margin,
        position_stiffness=stiffness, position_damping=damping,
        velocity_fraction=float(limits.velocity_fraction),
        velocity_damping=float(limits.velocity_damping),
        workspace_min=low, workspace_max=high,
        workspace_margin=float(limits.workspace_margin),
        workspace_stiffness=float(limits.workspace_stiffness),
        workspace_damping=float(limits.workspace_damping))


@dataclass(frozen=True, eq=False)
class ControllerSettings:
    mode: str
    model: Chain  # the URDF's chain with its payload: the one model every stage uses
    payload_kg: float
    limits: np.ndarray  # N m or N, the laws' saturation
    max_effort_rate: np.ndarray  # N m/s per joint, inf: none
    rate: float  # Hz, 0: a command per state
    state_timeout: float  # s
    on_state_timeout: str  # "hold" or "stop"
    target_filter: float  # s
    nullspace_posture: np.ndarray  # None: the posture at entry
    joint: JointLaw
    cartesian: Cartesian
    goals: Goals
    contact: Contact  # None: no observer
    guard: Limits
    soft_start: float  # s
    teach_damping: np.ndarray  # 1/s, per joint: teach mode's
    arm_compensates_gravity: bool = False  # the command leaves g(q) out: the arm adds it


def controller_settings(chain, p):
    """ControllerSettings from the controller's parameters as CONTROLLER.read gives them for
    the chain's joints (per-joint values in chain order; the node has run the table's checks).
    ValueError names the parameter and the value.
    """
    ee_links = tuple(link for link in p.ee_links if link) or (p.ee_link or chain.tip_link,)
    for link in ee_links:
        chain.frame(link, "ee_link")  # ValueError naming it
    frames = len(ee_links)
    kd = critical_damping(p.kp) if p.kd is None else p.kd
    check_gains(p.mode, p.kp, kd, p.control_period, chain.joint_names)
    model = payload_model(chain, p)
    limits = effort_limits(chain, p.effort_limits)
    return ControllerSettings(
        mode=p.mode, model=model,
        payload_kg=round(float(model.mass.sum() - chain.mass.sum()), 9), limits=limits,
        max_effort_rate=rate_limits(limits, p.max_effort_rate,
                                    [joint.type == "prismatic" for joint in chain.joints]),
        rate=p.rate, state_timeout=p.state_timeout, on_state_timeout=p.on_state_timeout,
        target_filter=p.target_filter, nullspace_posture=p.nullspace_posture,
        joint=JointLaw(
            mode=p.mode if p.mode in MODES else MODES[0], kp=p.kp, kd=kd, ki=p.ki,
            integral_limit=p.integral_limit,
            friction_compensation=bool(p.friction_compensation),
            friction_deadband=p.friction_deadband, period=p.control_period),
        cartesian=Cartesian(
            ee_link=ee_links,
            stiffness=per_frame(p.cartesian_stiffness, frames, "cartesian_stiffness"),
            damping=None if unset(p.cartesian_damping) else per_frame(
                p.cartesian_damping, frames, "cartesian_damping"),
            nullspace_stiffness=p.nullspace_stiffness, nullspace_damping=p.nullspace_damping,
            operational_space=bool(p.operational_space),
            max_pose_error=gain_vector(p.max_pose_error, 2, "max_pose_error")),
        contact=contact_settings(chain, p),
        guard=limits_settings(chain, p.limits, frames),
        soft_start=float(p.soft_start), teach_damping=p.teach.damping,
        arm_compensates_gravity=bool(p.arm_compensates_gravity),
        goals=Goals(
            tolerances=goals.Tolerances.defaults(
                p.constraints.trajectory, p.constraints.goal,
                p.constraints.stopped_velocity_tolerance, p.constraints.goal_time),
            trajectory_check=p.trajectory_check,
            interpolate_from_desired_state=bool(p.interpolate_from_desired_state),
            allow_partial_joints_goal=bool(p.allow_partial_joints_goal),
            allow_nonzero_velocity_at_trajectory_end=bool(
                p.allow_nonzero_velocity_at_trajectory_end)))
