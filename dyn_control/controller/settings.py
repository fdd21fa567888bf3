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
from dyn_control.controller.laws import check_gains, critical_damping, gain_vector, rate_limits
from dyn_control.cores import JointSettings
from dyn_control.model.chain import Chain, to_chain_order
from dyn_control.parameters import MODES, payload_model, unset


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


def contact_settings(chain, value, per_joint):
    """Contact from the parameters, or None when external_torque.enabled is false. ValueError
    when a collision level is below its contact level (Franka's lower <= upper).
    """
    if not value("external_torque.enabled"):
        return None
    contact, collision = (per_joint("collision.joint_torque_contact"),
                          per_joint("collision.joint_torque_collision"))
    for name, low, high in zip(chain.joint_names, contact, collision):
        if 0 < high < low:
            raise ValueError(f"collision.joint_torque_collision on {name}: {high:g} is below "
                             f"collision.joint_torque_contact {low:g}")
    force_low, force_high = value("collision.force_contact"), value("collision.force_collision")
    if 0 < force_high < force_low:
        raise ValueError(f"collision.force_collision: {force_high:g} N is below "
                         f"collision.force_contact {force_low:g} N")
    return Contact(observer_gain=float(value("external_torque.observer_gain")),
                   joint_torque_contact=contact, joint_torque_collision=collision,
                   force_contact=float(force_low), force_collision=float(force_high),
                   reaction=value("collision.reaction"),
                   comply_damping=per_joint("collision.comply_damping"))


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


def walls(value, frames):
    """(low, high), each (frames, 3) m, from limits.workspace_min/max (3 values, the same box
    for every ee_link, or 3 per ee_link; unset: no wall). ValueError names a bad value.
    """
    boxes = []
    for name, fill in (("limits.workspace_min", -np.inf), ("limits.workspace_max", np.inf)):
        given = value(name)
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


def limits_settings(chain, value, per_joint, frames):
    """Limits from the parameters; ValueError names a margin over half its joint's range or a
    box whose min is not below its max.
    """
    given = value("limits.position_margin")
    margin = (barriers.default_margins(chain) if unset(given)
              else per_joint("limits.position_margin"))
    margin = np.where(np.isfinite(chain.position_max - chain.position_min), margin, 0.0)
    barriers.check_margins(chain, margin)
    stiffness = per_joint("limits.position_stiffness")
    damping = (2.0 * np.sqrt(stiffness) if unset(value("limits.position_damping"))
               else per_joint("limits.position_damping"))
    low, high = walls(value, frames)
    return Limits(
        enabled=bool(value("limits.enabled")), position_margin=margin,
        position_stiffness=stiffness, position_damping=damping,
        velocity_fraction=float(value("limits.velocity_fraction")),
        velocity_damping=float(value("limits.velocity_damping")),
        workspace_min=low, workspace_max=high,
        workspace_margin=float(value("limits.workspace_margin")),
        workspace_stiffness=float(value("limits.workspace_stiffness")),
        workspace_damping=float(value("limits.workspace_damping")))


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


def controller_settings(chain, value, order=None):
    """ControllerSettings from the controller's parameters, read by value(name) (see
    dyn_control.parameters.CONTROLLER, whose checks the node has run); per-joint values come
    in `joints` order (order[i]: the chain index of the i-th) and go out in chain order.
    ValueError names the parameter and the value.
    """
    joints = JointSettings(chain, value, order)
    per_joint = joints.gains

    def constraint(kind):  # constraints.<joint>.<kind>, chain order
        return np.array([value(f"constraints.{name}.{kind}") for name in chain.joint_names])

    kp = per_joint("kp")
    ee_links = (tuple(link for link in value("ee_links") if link)
                or (value("ee_link") or chain.tip_link,))
    for link in ee_links:
        chain.frame(link, "ee_link")  # ValueError naming it
    frames = len(ee_links)
    damping = value("cartesian_damping")
    kd = critical_damping(kp) if value("kd") is None else per_joint("kd")
    mode = value("mode")
    check_gains(mode, kp, kd, value("control_period"), chain.joint_names)
    model = payload_model(chain, value)
    limits, rate = joints.effort_limits(), value("max_effort_rate")
    if not unset(rate):
        rate = to_chain_order(gain_vector(rate, chain.n, "max_effort_rate"), joints.order)
    return ControllerSettings(
        mode=mode, model=model, payload_kg=round(float(model.mass.sum() - chain.mass.sum()), 9),
        limits=limits, max_effort_rate=rate_limits(
            limits, rate, [joint.type == "prismatic" for joint in chain.joints]),
        rate=value("rate"), state_timeout=value("state_timeout"),
        on_state_timeout=value("on_state_timeout"), target_filter=value("target_filter"),
        nullspace_posture=joints.positions("nullspace_posture"),
        joint=JointLaw(
            mode=mode if mode in MODES else MODES[0], kp=kp, kd=kd, ki=per_joint("ki"),
            integral_limit=per_joint("integral_limit"),
            friction_compensation=bool(value("friction_compensation")),
            friction_deadband=value("friction_deadband"), period=value("control_period")),
        cartesian=Cartesian(
            ee_link=ee_links,
            stiffness=per_frame(value("cartesian_stiffness"), frames, "cartesian_stiffness"),
            damping=None if unset(damping) else per_frame(damping, frames, "cartesian_damping"),
            nullspace_stiffness=per_joint("nullspace_stiffness"),
            nullspace_damping=None if unset(value("nullspace_damping")) else per_joint(
                "nullspace_damping"),
            operational_space=bool(value("operational_space")),
            max_pose_error=gain_vector(value("max_pose_error"), 2, "max_pose_error")),
        contact=contact_settings(chain, value, per_joint),
        guard=limits_settings(chain, value, per_joint, frames),
        soft_start=float(value("soft_start")), teach_damping=per_joint("teach.damping"),
        arm_compensates_gravity=bool(value("arm_compensates_gravity")),
        goals=Goals(
            tolerances=goals.Tolerances.defaults(
                constraint("trajectory"), constraint("goal"),
                value("constraints.stopped_velocity_tolerance"), value("constraints.goal_time")),
            trajectory_check=value("trajectory_check"),
            interpolate_from_desired_state=bool(value("interpolate_from_desired_state")),
            allow_partial_joints_goal=bool(value("allow_partial_joints_goal")),
            allow_nonzero_velocity_at_trajectory_end=bool(
                value("allow_nonzero_velocity_at_trajectory_end"))))
