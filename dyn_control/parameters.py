"""The nodes' parameters, one table per node: name, default, description, whether it can change
at run time, and the check its value must pass. The table drives the declaration, the
validation at start-up and on `ros2 param set` alike, the read-only list and the generated page
docs/parameters.md (`python -m dyn_control.parameters` prints it; a test keeps them equal).

Pure Python: the nodes turn an entry into a ROS declaration (dyn_control.nodes.params).
"""

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, make_dataclass, replace

import numpy as np

from dyn_control.model.chain import to_chain_order

# The controller's modes and the defaults the tables show, in one place: the laws, the barriers
# and the simulator take theirs from here.
# the joint-space laws (controller.laws), which controller.laws.register_mode extends
MODES = ["computed_torque", "feedforward", "gravity_pd"]
TEACH = "teach"  # the controller mode of TeachLaw
CARTESIAN_IMPEDANCE = "cartesian_impedance"  # the controller mode of CartesianLaw
DEFAULT_KP = 400.0  # 1/s^2: natural frequency 20 rad/s (config/controller.yaml says the same)
DEFAULT_FRICTION_DEADBAND = 1e-4  # rad
DEFAULT_PERIOD = 1e-3  # s, the control period the damping compensation assumes (1 kHz)
# rad s. Ki * integral_limit bounds the acceleration the integral can ask for: 800 rad/s^2 at
# w = 20 rad/s (Ki = 8000), far above a payload's few tens, yet bounded when a joint is blocked.
DEFAULT_INTEGRAL_LIMIT = 0.1
# s: the default rate limit brings in the arm's largest effort in this long, on every joint of
# that kind (revolute or prismatic): Franka's limit, 1000 N m/s on all seven joints, is its 87
# N m over it. Per joint, each limit over it, a 3 N m wrist took 60 ms to flip its 1 N m of
# Coulomb compensation at a reversal (Tiago++: 3e-3 rad off); and 1000 N m/s on a UR10, its
# gravity ramped in from zero at start, sagged 0.08 rad before the command held it.
EFFORT_RISE = 0.087
DEFAULT_CARTESIAN_STIFFNESS = (500.0, 500.0, 500.0, 30.0, 30.0, 30.0)  # N/m (x, y, z), N m/rad
DEFAULT_MAX_POSE_ERROR = (0.1, 0.5)  # m, rad
DEFAULT_NULLSPACE_STIFFNESS = 10.0  # N m/rad
DEFAULT_MARGIN_SHARE = 0.1  # of each joint's range: the simulator starts at least this far in
DEFAULT_MARGIN_MAX = 0.2  # rad or m: the default margin on a wide joint
DEFAULT_BARRIER_STIFFNESS = 1000.0  # 1/s^2: about 32 rad/s at the margin's edge
DEFAULT_VELOCITY_FRACTION = 0.8
DEFAULT_VELOCITY_DAMPING = 50.0  # 1/s at the middle of the band
DEFAULT_WALL_MARGIN = 0.05  # m
DEFAULT_WALL_STIFFNESS = 1000.0  # N/m
DEFAULT_WALL_DAMPING = 50.0  # N s/m
INTEGRATORS = ("rk4", "semi_implicit_euler")  # the simulator's
DEFAULT_DT = 1e-3  # s, the simulator's step

EXECUTORS = ("single_threaded", "multi_threaded", "events")


@dataclass(frozen=True)
class Param:
    """One parameter. default None: unset (any type; the node derives the value). `choices`,
    or `low`/`high` (a finite number, bounds included unless `open_low`), check a value;
    per-joint values (a scalar or one per joint) are checked where the joint count is known.
    `per_joint`: GAINS (a scalar or one finite value >= 0 per joint) or POSITIONS (one finite
    value per joint), read by Table.read into an array in chain order (unset: None). `integer`:
    the number must be a whole one (3.0 is read as 3).
    `choices` may be a function that returns them, read at each check (the controller's modes,
    which controller.laws.register_mode extends). `any_type` allows a scalar or a list (ROS's
    dynamic typing); `run_time`, whether `ros2 param set` may change it. `number`: the value is a
    finite number (an integer for a float too), or with `any_type` a list of them; a boolean or a
    string is refused, never read as 1.0 (default: whether the default is a number; None is unset).
    A name with `<joint>` in it stands for one parameter per controlled joint (JTC's
    `constraints.<joint>.goal`), declared once the joints are known (Table.for_joints).
    """

    name: str
    default: object
    description: str
    run_time: bool = True
    choices: object = ()  # a tuple, or a function returning one
    low: float = None
    high: float = None
    open_low: bool = False
    any_type: bool = False
    shown_default: str = None  # how docs/parameters.md shows the default, if not the value
    number: bool = None
    per_joint: str = None  # GAINS or POSITIONS
    integer: bool = False  # the number must be a whole one (a count, a priority)

    def __post_init__(self):
        if self.number is None:
            object.__setattr__(self, "number", _is_number(self.default) or (
                isinstance(self.default, list) and self.default != [] and
                all(_is_number(x) for x in self.default)))

    def check(self, value, name=None):
        """ValueError naming the parameter (`name`: one a per-joint entry stands for) and the
        value, or None.
        """
        name = name or self.name
        if self.number:
            self._check_number(value, name)
        if self.integer and not float(value).is_integer():
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        choices = self.choices() if callable(self.choices) else self.choices
        if choices and value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
        if self.low is None and self.high is None:
            return
        ok = _is_number(value) and math.isfinite(value)
        if ok and self.low is not None:
            ok = value > self.low if self.open_low else value >= self.low
        if ok and self.high is not None:
            ok = value <= self.high
        if not ok:
            raise ValueError(f"{name} must be {self._bounds()}, got {value!r}")

    def _check_number(self, value, name):
        if value is None and self.default is None:
            return  # unset
        # (rclpy hands a double array over as array.array, a Sequence like list and tuple)
        listed = self.any_type and isinstance(value, Sequence) and not isinstance(value, str)
        bad = [(k, x) for k, x in enumerate(value if listed else [value])
               if not (_is_number(x) and math.isfinite(x))]
        if not bad:
            return
        what = "a finite number" + (" or a list of them" if self.any_type else "")
        k, item = bad[0]
        kind = {bool: "a boolean", str: "a string"}.get(type(item), type(item).__name__)
        where = f"item {k}: {item!r}, " if listed else ""
        raise ValueError(f"{name} must be {what}, got {value!r} ({where}{kind})")

    def _bounds(self):
        if self.high is None:
            return f"> {self.low:g}" if self.open_low else f">= {self.low:g}"
        if self.low is None:
            return f"<= {self.high:g}"
        return f"in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"


    def read(self, value, n, order):
        """The value as settings hold it: per-joint values (in `joints` order, order[i] the
        chain index of the i-th) as an array in chain order, a list as a tuple. ValueError
        names the parameter and the value.
        """
        if self.integer:
            return int(value)
        if self.per_joint is None:
            listed = isinstance(value, Sequence) and not isinstance(value, str)
            return tuple(value) if listed else value
        if unset(value):
            return None
        values = (gain_vector(value, n, self.name) if self.per_joint == GAINS
                  else positions(value, n, self.name))
        return values if order is None else to_chain_order(values, order)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


GAINS, POSITIONS = "gains", "positions"  # Param.per_joint


def gain_vector(value, n, name):
    """A scalar or one value per joint -> (n,) finite, non-negative array; ValueError names it."""
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.ndim != 1 or arr.size not in (1, n):
        raise ValueError(f"{name} must be a scalar or {n} values, got {arr.tolist()}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {arr.tolist()}")
    return np.broadcast_to(arr, (n,)).copy()


def positions(value, n, name):
    """n finite positions (rad or m, any sign) -> (n,) array; ValueError names it."""
    values = np.atleast_1d(np.asarray(value, dtype=float))
    if values.shape != (n,) or not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be {n} finite values, got {values.tolist()}")
    return values


JOINT = "<joint>"


class Table:
    """A node's parameters (its name: the settings' class name, as `Controller`)."""

    def __init__(self, name, *params):
        self.name = name
        self.params = {p.name: p for p in params}
        self._classes = {}  # (a group's path, its fields) -> its frozen dataclass
        # a per-joint entry matches its names: constraints.<joint>.goal -> constraints.X.goal
        self._per_joint = [(re.compile(re.escape(p.name).replace(re.escape(JOINT), "[^.]+") + "$"),
                            p)
                           for p in params if JOINT in p.name]

    def __iter__(self):
        """The parameters a node declares at start (per-joint entries: see for_joints)."""
        return (p for p in self.params.values() if JOINT not in p.name)

    def __getitem__(self, name):
        found = self.find(name)
        if found is None:
            raise KeyError(name)
        return found

    def find(self, name):
        """The entry that declares `name` (a per-joint one for a joint's name), or None."""
        if name in self.params:
            return self.params[name]
        return next((p for pattern, p in self._per_joint if pattern.match(name)), None)

    def for_joints(self, joint_names):
        """The per-joint entries, one per joint: what a node declares once it has its model."""
        return [replace(p, name=p.name.replace(JOINT, joint)) for _, p in self._per_joint
                for joint in joint_names]

    def read(self, value, joint_names=None, order=None):
        """Frozen settings with the parameters' own names, each read once by value(name):
        settings.kp, settings.limits.enabled (a dotted name is a group), and for a `<joint>`
        entry one value per joint of joint_names (settings.constraints.goal). Per-joint
        parameters (Param.per_joint) come in `joints` order, order[i] the index in joint_names
        of the i-th (None: that order), and are kept as arrays in joint_names' order.
        joint_names None (a node before its model): those two kinds are left out. A misspelt
        name is an AttributeError, never a default. ValueError names a bad value.
        """
        groups = {}
        for p in self.params.values():
            if joint_names is None and (JOINT in p.name or p.per_joint):
                continue
            if JOINT in p.name:
                path = p.name.replace("." + JOINT, "").split(".")
                got = np.array([value(p.name.replace(JOINT, joint)) for joint in joint_names],
                               dtype=float)
            else:
                path = p.name.split(".")
                got = p.read(value(p.name), len(joint_names or ()), order)
            group = groups
            for key in path[:-1]:
                group = group.setdefault(key, {})
            group[path[-1]] = got
        return self._frozen((), groups)

    def _frozen(self, path, fields):
        values = {key: self._frozen((*path, key), got) if isinstance(got, dict) else got
                  for key, got in fields.items()}
        shape = (path, tuple(values))
        if shape not in self._classes:
            name = "".join(part.title().replace("_", "") for part in (self.name, *path))
            self._classes[shape] = make_dataclass(name, list(values), frozen=True, eq=False)
        return self._classes[shape](**values)

    def read_only(self):
        return [p.name for p in self if not p.run_time]

    def check(self, values):
        """Check each (name, value) of `values` that has a check; ValueError otherwise."""
        for name, value in values.items():
            param = self.find(name)
            if param is not None:
                param.check(value, name)

    def markdown(self, params=None):
        """The markdown table of `params` (default: all of the table) in docs/parameters.md:
        parameter, default, whether `ros2 param set` can change it, meaning.
        """
        rows = ["| parameter | default | run time | meaning |", "|---|---|---|---|"]
        for p in self.params.values() if params is None else params:
            default = p.shown_default if p.shown_default is not None else (
                f"`{p.default}`" if isinstance(p.default, str) and p.default else
                '""' if p.default == "" else str(p.default).lower() if isinstance(p.default, bool)
                else str(p.default))
            rows.append(f"| `{p.name}` | {default} | {'yes' if p.run_time else 'no'} | "
                        f"{p.description} |")
        return "\n".join(rows)


MODEL = (
    Param("robot_description", "", "URDF text (what launch files pass)", run_time=False),
    Param("urdf_file", "", "URDF or .xacro path, used when `robot_description` is empty",
          run_time=False),
    Param("joints", [""], "controlled joints, in the order of the effort command (ros2_control "
          "style); joints on several branches (a torso and two arms) make a tree", run_time=False,
          shown_default="chain's joints"),
    Param("root_link", "", "chain base (see `load_chain`)", run_time=False,
          shown_default="URDF root"),
    Param("tip_link", "", "chain end (see `load_chain`)", run_time=False,
          shown_default="end of the longest path"),
    Param("unlimited_joints", [""], "joints whose URDF limits are missing, zero, swapped or "
          "not finite, run without the limits the URDF does not give; any other such joint "
          "stops the node at start-up, in one line naming it and the value", run_time=False,
          shown_default="none"),
    QOS_RELIABILITY := Param("qos_reliability", "reliable",
                             "QoS of `/joint_states` and the effort commands: "
          "`reliable` or `best_effort` (for lossy links); depth 1, so a late tick uses the newest "
          "message", run_time=False, choices=("reliable", "best_effort")),
    EXECUTOR := Param("executor", "events", "rclpy executor: `events` "
                      "(rclpy.experimental.EventsExecutor), `single_threaded` or "
                      "`multi_threaded` ([measured](benchmarks.md#the-executors-compared))",
                      run_time=False,
                      choices=EXECUTORS),
)

# The ticks' real-time scheduling (dyn_control.nodes.realtime), with controller_manager's names
REALTIME = (
    THREAD_PRIORITY := Param(
        "thread_priority", 0, "SCHED_FIFO priority (1 to 99) of the threads that run the "
        "ticks, from the first tick, as controller_manager's update loop (its default: 50; "
        "set it on the arm's computer); 0 = the OS's default scheduling. Without the privilege "
        "the OS refuses: /diagnostics and the log say so, and the node runs on "
        "([real-time scheduling](real_arm.md#real-time-scheduling))",
        run_time=False, low=0, high=99, integer=True),
    Param("lock_memory", False, "lock the process's memory (mlockall) at start-up, so that no "
          "page fault stalls a tick (controller_manager does by default on a PREEMPT_RT kernel)",
          run_time=False),
)

PAYLOAD = (
    Param("payload_mass", 0.0, "kg of a rigid payload the arm carries; 0 = none", any_type=True),
    Param("payload_com", [0.0, 0.0, 0.0], "m, its centre of mass in `payload_link`'s frame",
          any_type=True),
    Param("payload_inertia", [0.0] * 6, "kg·m², ixx, iyy, izz, ixy, ixz, iyz about its centre "
          "of mass", any_type=True),
    Param("payload_link", "", "the link that carries it", shown_default='"" = tip link'),
)

# Trajectory goals, with joint_trajectory_controller's names and defaults
# (dyn_control.controller.goals)
GOALS = (
    Param("interpolate_from_desired_state", False, "true: a new trajectory starts from the "
          "current desired state; false (as JTC): from the measured state"),
    Param("allow_partial_joints_goal", False, "take a trajectory that names only some of the "
          "joints (the others hold); false: refused with INVALID_JOINTS"),
    Param("allow_nonzero_velocity_at_trajectory_end", False, "take a trajectory whose last "
          "point still moves; false: refused with INVALID_GOAL"),
    Param("action_monitor_rate", 20.0, "Hz (steady clock) of the action's feedback and of its "
          "check for a finished goal", run_time=False, low=0.1, any_type=True),
    Param("state_publish_rate", 50.0, "Hz (state time) of `~/controller_state`; at or above "
          "the state rate it goes out on every tick", run_time=False, low=0.0, open_low=True,
          any_type=True),
    Param("constraints.goal_time", 0.0, "s after the trajectory's end within which the goal "
          "tolerances must hold, else GOAL_TOLERANCE_VIOLATED; 0 = no limit", low=0.0,
          any_type=True),
    Param("constraints.stopped_velocity_tolerance", 0.01, "rad/s or m/s: the goal tolerance "
          "on every joint's velocity; 0 = not checked", low=0.0, any_type=True),
    Param("constraints.<joint>.trajectory", 0.0, "rad or m: the joint's path tolerance on "
          "position, else PATH_TOLERANCE_VIOLATED; 0 = not checked", low=0.0, any_type=True),
    Param("constraints.<joint>.goal", 0.0, "rad or m: the joint's goal tolerance on position "
          "at the end; 0 = not checked", low=0.0, any_type=True),
)

# The cartesian_impedance mode (dyn_control.controller.cartesian); per-joint values in `joints`
# order
CARTESIAN = (
    Param("ee_link", "", "the link whose pose the mode controls: any link the chain moves",
          shown_default='"" = tip link'),
    Param("ee_links", [""], "several such links, one task each in one Jacobian with one "
          "nullspace (both hands of a tree); their topics are `~/<link>/target_pose`, "
          "`~/<link>/target_wrench` and `~/<link>/current_pose`; overrides `ee_link`",
          run_time=False, shown_default="unset = `ee_link` alone"),
    Param("cartesian_stiffness", list(DEFAULT_CARTESIAN_STIFFNESS),
          "K: x, y, z in N/m, then rx, ry, rz "
          "in N·m/rad (base axes), or a scalar for all six; with `ee_links`, a scalar, 6 for "
          "all or 6 per link", any_type=True),
    Param("cartesian_damping", None, "D, 6 values as K; unset: critical, 2√K with "
          "`operational_space`, else for each mode of the arm's inertia Λ at the pose "
          "(2 Λ^½ (Λ^-½ K Λ^-½)^½ Λ^½)",
          any_type=True, shown_default="unset = critical", number=True),
    Param("nullspace_stiffness", DEFAULT_NULLSPACE_STIFFNESS, "N·m/rad toward the posture, a "
          "scalar or one per joint", any_type=True, per_joint=GAINS),
    Param("nullspace_damping", None, "N·m·s/rad, a scalar or one per joint, on the nullspace "
          "velocity; unset: 2√(K_n I_i), critical for each joint's effective inertia I_i = "
          "1/(M⁻¹)_ii", any_type=True,
          shown_default="unset = critical", number=True, per_joint=GAINS),
    Param("nullspace_posture", None, "rad or m, one per joint: the posture the nullspace "
          "holds (`~/target_joint` changes it)", any_type=True,
          shown_default="unset = the posture on entering the mode", number=True,
          per_joint=POSITIONS),
    Param("operational_space", False, "F = Λ(K e − D ẋ − J̇q̇) + w: the error moves as a "
          "unit-mass spring-damper in every direction (K in 1/s²); false: the impedance F = "
          "K e − D ẋ − ΛJ̇q̇ + w"),
    Param("max_pose_error", list(DEFAULT_MAX_POSE_ERROR), "m, rad: the position and the "
          "rotation error are clipped to these norms (0: no clip)", any_type=True),
    Param("target_filter", 0.0, "s, time constant of a first-order filter on the target pose; "
          "0 = off", low=0.0, any_type=True),
)

# Contact: the momentum observer (dyn_control.controller.observer) and Franka's two levels of
# detection (dyn_control.controller.contact); per-joint values in `joints` order
CONTACT = (
    Param("external_torque.enabled", True, "estimate the external joint torques and the wrench "
          "at each ee_link from the model (momentum observer), and detect collisions",
          run_time=False),
    Param("external_torque.observer_gain", 50.0, "1/s, K_O: the estimate follows the true "
          "external torque as a first-order filter of time constant 1/K_O", low=0.0,
          open_low=True, any_type=True),
    Param("external_torque.publish_rate", 100.0, "Hz (state time) of `~/external_joint_torques` "
          "and `~/external_wrench_in_base_frame`", run_time=False, low=0.0, open_low=True,
          any_type=True),
    Param("collision.joint_torque_contact", 5.0, "N·m or N, a scalar or one per joint: contact "
          "while a joint's external torque is over it; 0 = not checked", any_type=True,
          per_joint=GAINS),
    Param("collision.joint_torque_collision", 20.0, "N·m or N, a scalar or one per joint: a "
          "collision (latched) once a joint's external torque is over it; 0 = not checked",
          any_type=True, per_joint=GAINS),
    Param("collision.force_contact", 10.0, "N: contact while the external force at an ee_link "
          "is over it; 0 = not checked", low=0.0, any_type=True),
    Param("collision.force_collision", 30.0, "N: a collision once the external force at an "
          "ee_link is over it; 0 = not checked", low=0.0, any_type=True),
    Param("collision.reaction", "hold", "on a collision: `hold` (stiff hold where the arm is), "
          "`comply` (gravity compensation with damping: the arm can be pushed away) or `none` "
          "(report only); `hold` and `comply` end the running goal and refuse new ones until "
          "`~/reset_collision`", choices=("hold", "comply", "none")),
    Param("collision.comply_damping", 10.0, "1/s: the joint damping of `comply`, times each "
          "joint's inertia", low=0.0, any_type=True, per_joint=GAINS),
)

# The guard stage (dyn_control.controller.barriers, controller.guard): in every mode; per-joint
# values in `joints` order
LIMITS = (
    Param("limits.enabled", True, "barriers at the joint limits, damping near the velocity "
          "limits (over them: a fault, the arm holds), walls around each ee_link"),
    Param("limits.position_margin", None, "rad or m, a scalar or one per joint: the barrier "
          "acts within it of each URDF position limit; at most half the range", any_type=True,
          number=True, shown_default=f"unset = {DEFAULT_MARGIN_SHARE:g} of the range, "
          f"at most {DEFAULT_MARGIN_MAX:g}", per_joint=GAINS),
    Param("limits.position_stiffness", DEFAULT_BARRIER_STIFFNESS, "1/s², a scalar or one per "
          "joint: the barrier's stiffness at the margin's edge, times each joint's inertia",
          any_type=True, per_joint=GAINS),
    Param("limits.position_damping", None, "1/s, a scalar or one per joint: the barrier's "
          "damping inside the margin, both ways (a joint that came in fast is not thrown "
          "back out)", any_type=True, number=True,
          shown_default="unset = 2√stiffness", per_joint=GAINS),
    Param("limits.velocity_fraction", DEFAULT_VELOCITY_FRACTION, "of each URDF "
          "velocity limit, where the velocity damping begins", low=0.0, high=1.0,
          open_low=True),
    Param("limits.velocity_damping", DEFAULT_VELOCITY_DAMPING, "1/s, times each "
          "joint's inertia, halfway from the fraction to the limit", low=0.0),
    Param("limits.workspace_min", [], "m, base frame: the walls' lower corner (x, y, z), or 3 "
          "per ee_link; empty = no wall", any_type=True, number=True, shown_default="[] = none"),
    Param("limits.workspace_max", [], "m: the walls' upper corner, as `limits.workspace_min`",
          any_type=True, number=True, shown_default="[] = none"),
    Param("limits.workspace_margin", DEFAULT_WALL_MARGIN, "m: the walls' barrier acts "
          "within it", low=0.0, open_low=True),
    Param("limits.workspace_stiffness", DEFAULT_WALL_STIFFNESS, "N/m at the walls' "
          "margin edge", low=0.0),
    Param("limits.workspace_damping", DEFAULT_WALL_DAMPING, "N·s/m of motion toward a "
          "wall", low=0.0),
)

TEACH_MODE = (
    Param("teach.damping", 2.0, "1/s, a scalar or one per joint: mode `teach`'s damping, "
          "through the mass matrix: a motion left by a push decays as e^(−damping·t)",
          any_type=True, per_joint=GAINS),
    Param("teach.folder", "teach_recordings", "where `~/teach/record` writes its rosbag2 "
          "folders", run_time=False),
)

CONTROLLER = Table(
    "controller",
    *MODEL,
    Param("mode", "computed_torque", "`computed_torque`, `feedforward` (ID(q, q̇_d, q̈_d) + "
          "PD), `gravity_pd` (g(q) + PD), `cartesian_impedance` ([cartesian.md](cartesian.md)) or "
          "`teach` (move the arm by hand: [real_arm.md](real_arm.md))",
          choices=lambda: (*MODES, CARTESIAN_IMPEDANCE, TEACH)),
    Param("kp", DEFAULT_KP, "1/s², a scalar or one per joint (in `joints` order)", any_type=True,
          per_joint=GAINS),
    Param("kd", None, "1/s, a scalar or one per joint; unset gives a critically damped error "
          "response", any_type=True, shown_default="unset = 2√kp", number=True, per_joint=GAINS),
    Param("ki", 0.0, "1/s³, integral gain, a scalar or one per joint; 0 = off ([when the "
          "model is wrong](controller.md#when-the-model-is-wrong))", any_type=True,
          per_joint=GAINS),
    Param("integral_limit", DEFAULT_INTEGRAL_LIMIT, "rad·s, a scalar or one per joint: the "
          "clamp on each joint's error integral (anti-windup)", any_type=True, per_joint=GAINS),
    *PAYLOAD,
    Param("trajectory_check", "reject", "a trajectory that needs more torque or velocity than "
          "the limits: `reject` (the running one continues), `warn` (run it, log it) or `off`",
          choices=("reject", "warn", "off")),
    Param("effort_limits", None, "N·m, a scalar or one per joint: overrides the URDF effort "
          "limits the command is saturated to", any_type=True, shown_default="URDF", number=True,
          per_joint=GAINS),
    Param("friction_compensation", True, "add the URDF's joint damping and friction "
          "([how](controller.md#joint-damping-and-friction-compensation))"),
    Param("friction_deadband", DEFAULT_FRICTION_DEADBAND, "rad: the friction compensation "
          "fades out within it of the target", low=0.0, open_low=True),
    Param("control_period", DEFAULT_PERIOD, "s between commands (your state period, or "
          "1/`rate`): the damping compensation models one period", low=0.0, high=1.0,
          open_low=True),
    Param("rate", 0.0, "Hz; 0 computes one command per joint-state message, otherwise on a "
          "timer", run_time=False, low=0.0),
    Param("state_timeout", 0.1, "s without a good joint state before feedback stops: simulated "
          "s under `use_sim_time`, wall s otherwise", low=0.0, open_low=True),
    Param("on_state_timeout", "hold", "`hold`: gravity compensation at the last good position; "
          "`stop`: publish nothing", choices=("hold", "stop")),
    Param("max_effort_rate", None, "N·m/s, a scalar or one per joint: the bound on the change "
          "between commands; 0 = off", any_type=True, number=True,
          shown_default=f"unset = the largest effort limit / {EFFORT_RISE:g} s on every joint "
          "(of each kind, revolute or prismatic: Franka's 1000 N·m/s, its 87 N·m over it)",
          per_joint=GAINS),
    Param("arm_compensates_gravity", False, "the arm adds its own gravity compensation to "
          "every command (Franka, a UR in direct torque, KUKA in FRI's torque mode): the "
          "published effort leaves g(q) out; the limits, the rate limit and the observer work "
          "on the whole torque ([real_arm.md](real_arm.md))", run_time=False),
    Param("soft_start", 0.2, "s over which the gains ramp in at start-up and after a switch "
          "of mode, the command starting from gravity compensation; 0 = off", low=0.0),
    *GOALS,
    *CARTESIAN,
    *CONTACT,
    *LIMITS,
    *TEACH_MODE,
    *REALTIME,
)

SIMULATOR = Table(
    "simulator",
    *MODEL,
    Param("initial_positions", None, "rad or m, in `joints` order; inside the URDF limits",
          run_time=False, any_type=True, number=True,
          shown_default="zeros, or the middle of the limits where 0 is outside them, at least "
          "10 % of the range inside each limit; where the effort limits cannot hold that "
          "against gravity, the nearest pose that needs at most 80 % of each", per_joint=POSITIONS),
    Param("dt", DEFAULT_DT, "s, fixed step: RK4 with the passive torques in its stages, then "
          "stiff damping, friction where a joint stops, and the stops implicitly "
          "([the step](simulator.md#the-physics-of-a-step))", run_time=False,
          low=0.0, high=0.1, open_low=True),
    Param("integrator", "rk4", "or `semi_implicit_euler` (drifts more; kept for comparison)",
          run_time=False, choices=INTEGRATORS),
    Param("substeps", 1, "physics steps per `dt`, the effort held over them; a simulated real "
          "arm needs none ([substeps](simulator.md#substeps))", run_time=False,
          low=1, integer=True),
    Param("publish_rate", 1000.0, "Hz of `/joint_states`", run_time=False, low=0.0,
          open_low=True),
    Param("publish_clock", False, "publish /clock for nodes with `use_sim_time`", run_time=False,
          shown_default="false (true in config)"),
    Param("synchronous", True, "wait for the command that answers each published state, then "
          "step ([synchronous](simulator.md#synchronous-and-free-running)); false: free running",
          run_time=False),
    Param("sync_timeout", 0.1, "wall s to wait for that answer before stepping on the last "
          "command (a missed deadline)", run_time=False, low=0.0, open_low=True),
    Param("real_time_factor", 1.0, "at most this many simulated s per wall s; 0 runs as fast as "
          "the loop goes", run_time=False, low=0.0),
    Param("wait_for_command", True, "joints braked (time runs) until the first command, so the "
          "arm does not fall while the controller starts", run_time=False),
    Param("effort_limits", None, "N·m, a scalar or one per joint: the applied effort is "
          "saturated to them", run_time=False, any_type=True, shown_default="URDF", number=True,
          per_joint=GAINS),
    Param("arm_compensates_gravity", False, "the simulated arm adds its own g(q) to every "
          "command, as Franka's, a UR's (direct torque) and KUKA's (FRI torque mode) firmware "
          "do; the published effort is the whole joint torque ([real_arm.md](real_arm.md))",
          run_time=False),
    Param("command_timeout", 0.2, "s without a command before the effort drops to zero (0 = "
          "never): simulated s when synchronous, wall s when free running", run_time=False,
          low=0.0),
    Param("command_sources", [""], "several controllers on one simulated robot: entries "
          "`TOPIC: JOINT, JOINT, ...`, each a Float64MultiArray topic and the joints it claims, in "
          "its command order; every simulated joint claimed once ([command "
          "sources](simulator.md#several-command-sources))", run_time=False,
          shown_default="one source, `effort_controller/commands` over `joints`"),
    Param("robots", [""], "a world of several robots (one URDF: model.world): entries "
          "`NAMESPACE: JOINT, JOINT, ...`, each robot's namespace and its joints, in its order; "
          "each robot's states go on `NAMESPACE/joint_states` and, unless command_sources says "
          "otherwise, its commands come on `NAMESPACE/effort_controller/commands`; every "
          "simulated joint in one robot ([a world of robots](simulator.md#a-world-of-robots))",
          run_time=False, shown_default="one robot: `joint_states` over every joint"),
    Param("command_type", "float64_multi_array", "`float64_multi_array`: effort commands on "
          "`/effort_controller/commands`, states on `/joint_states`; `joint_state`: the peer of "
          "ros2_control's topic-based hardware (JointStateTopicSystem), efforts by name on "
          "`/robot_joint_commands`, states on `/robot_joint_states`, free running "
          "([ros2_control.md](ros2_control.md))",
          run_time=False, choices=("float64_multi_array", "joint_state")),
    *(Param(p.name, p.default, p.description + " (the load the simulated arm carries: tests put "
            "one here that the controller does not know)" if p.name == "payload_mass" else
            p.description, any_type=p.any_type, shown_default=p.shown_default) for p in PAYLOAD),
    # a real arm's sensors, to try identification against: white, Gaussian, on what
    # is published only (the physics runs on the true state)
    Param("noise.position", 0.0, "rad or m, standard deviation of the noise on the published "
          "positions (0: none)", run_time=False, low=0.0),
    Param("noise.velocity", 0.0, "rad/s or m/s, likewise on the velocities", run_time=False,
          low=0.0),
    Param("noise.effort", 0.0, "N·m or N, likewise on the efforts", run_time=False, low=0.0),
    Param("noise.seed", 0, "seed of the noise (a run is repeatable)", run_time=False, low=0.0),
)

TRAJECTORY_DEMO = Table(
    "trajectory_demo",
    *MODEL,
    Param("duration", 10.0, "s of motion", run_time=False, low=0.0, open_low=True),
    Param("amplitude", 0.3, "rad, the largest per-joint amplitude (kept inside the limits)",
          run_time=False, low=0.0),
    Param("frequency", 0.2, "Hz, base frequency of the sines", run_time=False, low=0.0,
          open_low=True),
    Param("points_per_second", 50.0, "waypoints per second", run_time=False, low=0.0,
          open_low=True),
    Param("interface", "action", "`action`: a FollowJointTrajectory goal (as MoveIt sends), "
          "whose result it logs; `topic`: the controller's `~/joint_trajectory`. Without "
          "control_msgs it uses the topic", run_time=False, choices=("action", "topic")),
)


IDENTIFY = Table(
    "identify",
    *MODEL,
    Param("out_dir", "out", "folder of the identified URDF, the report and the recordings",
          run_time=False),
    Param("name", "", "the outputs' name: identified_<name>.urdf", run_time=False,
          shown_default="urdf_file's file name, else arm"),
    Param("period", 10.0, "s, the excitation's fundamental period", run_time=False, low=1.0),
    Param("periods", 6, "whole periods recorded of each run: a minute, over which 1 % effort "
          "noise averages out (with the identification tests' noise, 2 periods left the "
          "identified arm at 2.1 to 2.8x the true URDF's tracking error, 6 at 1.5 to 1.9x)",
          run_time=False, low=1.0),
    Param("harmonics", 5, "harmonics of the Fourier series per joint", run_time=False, low=2.0),
    Param("seed", 0, "seed of the excitation's optimization (the validation run uses seed + 1)",
          run_time=False, low=0.0),
    Param("points_per_second", 50.0, "waypoints per second of each run's goal", run_time=False,
          low=1.0),
    Param("effort_delay", 0.0, "s before its stamp that a joint state's effort acted, on "
          "average: 0 for a drive's measured torque; half the step (0.0005) for "
          "dynamics_simulator, which publishes the torque held over the step before the state",
          run_time=False, low=0.0, high=0.1),
)


CARTESIAN_DEMO = Table(
    "cartesian_demo",
    Param("radius", 0.05, "m, of the circle of targets (base y-z plane)", run_time=False,
          low=0.0),
    Param("period", 4.0, "s per circle", run_time=False, low=0.0, open_low=True),
    Param("circles", 1, "circles to go", run_time=False, low=0.0),
    Param("settle", 1.5, "s held before the push and after it", run_time=False, low=0.0),
    Param("push_force", [10.0, 0.0, 0.0], "N, base axes: the simulator's push on the end "
          "effector", run_time=False, any_type=True),
    Param("push_duration", 1.0, "s of pushing", run_time=False, low=0.0),
    EXECUTOR,
)


PAYLOAD_PARAMETERS = tuple(p.name for p in PAYLOAD)


def unset(value):
    """An optional parameter left out (None) or given as an empty list."""
    return value is None or (isinstance(value, (list, tuple)) and len(value) == 0)


def payload_model(chain, p):
    """chain.with_payload from the payload parameters of settings a table read; PayloadError
    (a ValueError) names the bad one.
    """
    return chain.with_payload(p.payload_mass, p.payload_com, p.payload_inertia,
                              p.payload_link or None)


def tables():
    """(title, markdown) of each parameter table, in the order of docs/parameters.md."""
    controller = tuple(p for p in CONTROLLER.params.values()
                       if p not in GOALS + CARTESIAN + CONTACT)
    return (("computed_torque_controller", CONTROLLER.markdown(controller)),
            ("computed_torque_controller: trajectory goals", CONTROLLER.markdown(GOALS)),
            ("computed_torque_controller: cartesian_impedance", CONTROLLER.markdown(CARTESIAN)),
            ("computed_torque_controller: contact and collisions", CONTROLLER.markdown(CONTACT)),
            ("dynamics_simulator", SIMULATOR.markdown()),
            ("trajectory_demo", TRAJECTORY_DEMO.markdown()),
            ("cartesian_demo", CARTESIAN_DEMO.markdown()),
            ("identify", IDENTIFY.markdown()))


def parameters_page():
    """docs/parameters.md, generated from the tables that declare and check the parameters."""
    sections = "".join(f"\n## {title}\n\n{table}\n" for title, table in tables())
    return ("# Parameters\n\n"
            "Generated from `dyn_control/parameters.py`, the tables that declare and check every\n"
            "parameter, by `python -m dyn_control.parameters > docs/parameters.md`; a test keeps\n"
            'this page equal to them. "run time: yes": `ros2 param set` can change it on a\n'
            "running node, checked as at start-up.\n" + sections)


if __name__ == "__main__":
    print(parameters_page(), end="")
