"""Control laws and their parameters: the formulas below are `_law`, compiled by numba.

e = q_d - q and ed = qd_d - qd (wrapped to [-pi, pi) on continuous joints), and ie the
integral of e over time, each joint's clamped to +-integral_limit (rad s). The modes:

- computed_torque: tau = M(q) v + C(q, qd) qd + g(q), v = qdd_d + Kd ed + Kp e + Ki ie. With
  the right model and Ki = 0 (default) the error obeys e'' + Kd e' + Kp e = 0 whatever the arm,
  critically damped for Kd = 2 sqrt(Kp). A load the model lacks (a payload, a wrong inertia)
  acts as an acceleration error; with Ki > 0 the integral learns it and e returns to zero:
  e''' + Kd e'' + Kp e' + Ki e = 0, all three poles at -w for Kp = 3 w^2, Kd = 3 w, Ki = w^3.
- feedforward:     tau = ID(q, qd_d, qdd_d) + I(q) (Kp e + Kd ed + Ki ie)
- gravity_pd:      tau = g(q) + I(q) (Kp e + Kd ed + Ki ie) (the usual baseline)

feedforward takes the desired motion through the model at the measured position (as PD+
does): ID(q_d, ...) put g(q_d) - g(q), a spring of the arm's own weight, against the PD, and on
a light arm that spring wins (the SO-100 fell 1.5 rad from a 0.01 rad offset with the default
gains); at q the weight is cancelled exactly, as in gravity_pd.

Kp (1/s^2), Kd (1/s) and Ki (1/s^3) mean the same in every mode: they multiply M in
computed_torque, and I(q) = diag(1 / (M(q)^-1)_jj) in the other two, each joint's inertia with
the other joints free. So a joint alone answers its error with the same natural frequency in
every mode, the light wrist as the heavy shoulder. (Gains applied as N m/rad made the defaults,
kd = 40 on a wrist of 4e-3 kg m^2 over a 1 ms period, an unstable loop.) Scaling by the diagonal
of M instead would not do: M^-1 diag(M) reaches gains of 58 (default arm) to 117 (xArm7) in
some direction, where M^-1 I(q) has a unit diagonal, so its gains sum to n.

The sampled loop (the command held over one control period T, as the synchronous simulator
applies it) of e'' = -g (Kp e + Kd e') is stable for Kd g T < 2 and Kp T < 2 Kd (Jury's test
on its characteristic polynomial z^2 - (2 - Kd g T - Kp g T^2 / 2) z + 1 - Kd g T + Kp g T^2 / 2).
g is 1 in computed_torque and at most n in the other modes (the eigenvalues of M^-1 I(q) sum to
n): check_gains refuses gains beyond that. The integral is kept across trajectories (it
estimates the unmodelled load) and cleared where Ki is 0.

friction_compensation adds the URDF's joint damping B and Coulomb friction F:
- damping, computed_torque: B (qd + s T v), v = qdd_d + Kd ed + Kp e, T the control period
  (period_damping). A real joint's damping acts through the whole period: at its mean
  velocity, s = 1/2, where it is light against the joint's inertia I (T B <= I/2, as the
  simulator's RK4 stages take it), and at its end velocity, s = 1, where it is stiffer, as the
  simulator's implicit solve takes it: (M + T B)(qd' - qd) = T (tau - bias - B qd), which
  asking M + T B for v cancels exactly, so that even damping far stiffer than the period
  (xArm7: 10 N m s/rad on 1.4e-4 kg m^2) neither destabilises the loop nor slows the error
  response. The other modes do the same with I(q) for M: B qd + (I + s T B)(Kp e + Kd ed +
  Ki ie); with B qd_d instead, a stiffly damped light joint crept at (its PD torque) / B and
  never closed a 0.01 rad offset (xArm7).
- friction: F clip((Kp e + Kd qd_d) / (Kp deadband), -1, 1): the direction the law pulls in,
  fading to zero within `deadband` (rad) of the target. friction * sign(qd_d) gave nothing at
  rest, so a joint stuck inside its friction band stayed there (xArm7: 6.7e-3 rad of a 1e-2
  offset left after 2 s); with the pull it ends within the deadband.

teach (TeachLaw), to move the arm by hand: tau = ID(q, qd, -c qd) + B qd + F clip(qd / band,
-1, 1) = g(q) + C(q, qd) qd - M(q) c qd + B qd + F clip(...). Gravity and the Coriolis terms
are cancelled, the URDF's damping and friction too (the friction in the direction of motion,
fading out below `band` rad/s, so an arm at rest stays where it was left: its own friction
holds it), and the damping c (1/s) acts through M: every motion a push left decays as e^-ct,
the heavy shoulder's as the light wrist's (with c I(q), each joint's inertia with the others
free, a push on the default arm still moved it 0.9 rad in the 4 s after it ended). B qd at the
measured qd cancels the damping: the arm moves as if it had none.

A joint-space mode of your own: register_mode(name, torque), with `torque` a compiled function
that fills tau (n,) from the model and workspace arrays, the state, the desired state and what
every mode shares (e, ed, v, the integral, the gains, the damping to compensate, the period). The
errors, the integral, the friction compensation and the saturation stay the package's, and the
controller, its parameter table and its checks take the new name (test_modes.py registers one).
"""

import math

import numpy as np

from dyn_control.dynamics import as_vector, inverse_dynamics
from dyn_control.kernels import mass_matrix as mass
from dyn_control.kernels import newton_euler
from dyn_control.kernels.compile import jit
from dyn_control.kernels.newton_euler import NO_WRENCH
from dyn_control.kernels.passive import staged
from dyn_control.model.chain import as_limit
from dyn_control.model.layout import Data
from dyn_control.parameters import (
    CARTESIAN_IMPEDANCE,
    DEFAULT_FRICTION_DEADBAND,
    DEFAULT_INTEGRAL_LIMIT,
    DEFAULT_PERIOD,
    EFFORT_RISE,
    MODES,
    TEACH,
    gain_vector,
)

TEACH_FRICTION_BAND = 0.01  # rad/s: teach's friction compensation fades out below it
COMPUTED_TORQUE, FEEDFORWARD, GRAVITY_PD = range(3)  # MODES' codes in the compiled law
REGISTERED = {}  # a registered joint-space mode's name -> its compiled torque (register_mode)


def critical_damping(kp):
    """Kd = 2 sqrt(Kp): the computed-torque error response is critically damped."""
    return 2.0 * np.sqrt(kp)


def check_gains(mode, kp, kd, period, names):
    """Refuse gains (n,) the sampled loop cannot hold stable at `period` (s) in `mode` (the
    module docstring's bounds): ValueError naming the joint, the gain and its limit.
    """
    coupling = len(names) if mode in (MODES[FEEDFORWARD], MODES[GRAVITY_PD]) else 1
    for name, p, d in zip(names, kp, kd):
        if d * coupling * period >= 2.0:
            raise ValueError(f"kd on {name}: {d:g} 1/s is not below {2.0 / (coupling * period):g}"
                             f", the most that {mode} holds stable at control_period {period:g} s")
        if p > 0 and p * period >= 2.0 * d:
            raise ValueError(f"kp on {name}: {p:g} 1/s^2 is not below {2.0 * d / period:g} "
                             f"(2 kd / control_period), the most that kd {d:g} damps at "
                             f"control_period {period:g} s")


def check_mode(mode):
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


@jit
def saturate(tau, limits):
    """Clip tau (n,) to +-limits (n,) in place and return it; an infinite limit does not clip.
    The one saturation of the package: the law's and the simulated motors'.
    """
    for i in range(tau.shape[0]):
        tau[i] = min(max(tau[i], -limits[i]), limits[i])
    return tau


@jit
def wrapped(err):
    """A continuous joint's position error, wrapped to [-pi, pi): the short way round."""
    return (err + math.pi) % (2 * math.pi) - math.pi


@jit
def friction_share(pull, band):
    """The share of a joint's Coulomb friction a law adds: the direction the law pulls in,
    fading out within `band` (pull / band, clipped to +-1); with no band (a deadband of 0), the
    whole friction in the pull's direction. Every law's friction term is this.
    """
    if band > 0:
        return min(max(pull / band, -1.0), 1.0)
    return 1.0 if pull > 0 else (-1.0 if pull < 0 else 0.0)


@jit
def period_damping(b, qd, qdd, period, inertia):
    """The torque that cancels joint damping b over one control period under the commanded
    acceleration qdd: b at the velocity the simulator's step takes the damping at. Its RK4
    stages take it continuously where kernels.passive.staged says so (inertia: the joint's
    with the others free, kg m^2 or kg), b (qd + period qdd / 2), the mean over the period;
    its implicit solve takes stiffer damping at the end velocity, b (qd + period qdd) (module
    docstring).
    """
    share = 0.5 if staged(period, b, inertia) else 1.0
    return b * (qd + share * period * qdd)


def all_finite(values):
    """Whether every value of a (n,) float64 array is finite. The builtin sum first: a numpy
    reduction costs microseconds in a control tick; only an overflowing sum looks closer.
    """
    return math.isfinite(sum(values.tolist())) or first_non_finite(values) is None


def first_non_finite(values):
    """The index of the first NaN or infinity in a (n,) array, or None: what an error names."""
    bad = ~np.isfinite(values)
    return int(np.argmax(bad)) if bad.any() else None


@jit
def at_limit(tau, limits):
    """Whether any joint's torque is at its saturation limit."""
    for i in range(tau.shape[0]):
        if abs(tau[i]) >= limits[i]:
            return True
    return False




# the rows of a ControlLaw's per-joint array (8, n) and the entries of its values
KP, KD, KI, INTEGRAL_LIMIT, WRAP, DAMPING, FRICTION, LIMITS = range(8)
MODE, DEADBAND, PERIOD = range(3)


@jit
def _law(mvec, mrot, ints, vecs, rots, mats, rows, values, q, qd, q_d, qd_d, qdd_d, integral,
         dt):
    """The laws of the module docstring -> (tau, e, ed), each (n,). rows (8, n), per joint:
    the gains, integral_limit, wrap (1: a continuous joint, e wrapped to [-pi, pi)), the
    damping and friction to compensate (zeros: none), limits (saturation, may be inf); values:
    the mode's code, deadband (rad) and period (s). Plain arrays: numba unboxes each argument
    of a call, 50 ns an array. integral (n,) is updated in place by e dt, and cleared where ki
    is 0.
    """
    kp, kd, ki, integral_limit = rows[KP], rows[KD], rows[KI], rows[INTEGRAL_LIMIT]
    wrap, damping, friction, limits = rows[WRAP], rows[DAMPING], rows[FRICTION], rows[LIMITS]
    mode, deadband, period = int(values[MODE]), values[DEADBAND], values[PERIOD]
    e, ed, v = _errors(kp, kd, ki, integral_limit, wrap, q, qd, q_d, qd_d, qdd_d, integral, dt)
    n = q.shape[0]
    model = (mvec, mrot, ints, vecs, rots, mats)
    tau = np.empty(n)
    if mode == COMPUTED_TORQUE:
        mass.mass_matrix_times_plus_bias(*model, q, qd, v, tau)
        damped = False
        for i in range(n):
            damped = damped or damping[i] > 0.0
        if damped:  # the damping over one control period; M is in the workspace already
            inertia = np.empty(n)
            mass.workspace_inertias(vecs, rots, mats, inertia)
            for i in range(n):
                tau[i] += period_damping(damping[i], qd[i], v[i], period, inertia[i])
    else:
        if mode == FEEDFORWARD:
            newton_euler.inverse_dynamics(*model, q, qd_d, qdd_d, NO_WRENCH, tau)
        else:
            zero = np.zeros(n)
            newton_euler.inverse_dynamics(*model, q, zero, zero, NO_WRENCH, tau)
        inertia = np.empty(n)
        mass.joint_inertias(*model, q, inertia)
        for i in range(n):  # the damping as computed_torque takes it, with I for M
            pd = kp[i] * e[i] + kd[i] * ed[i] + ki[i] * integral[i]
            tau[i] += inertia[i] * pd + period_damping(damping[i], qd[i], pd, period, inertia[i])
    return _finish(tau, e, ed, kp, kd, qd_d, friction, deadband, limits)


@jit
def _errors(kp, kd, ki, integral_limit, wrap, q, qd, q_d, qd_d, qdd_d, integral, dt):
    """(e, ed, v) of the module docstring, each (n,); the integral updated in place."""
    n = q.shape[0]
    e, ed, v = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        err = q_d[i] - q[i]
        if wrap[i]:
            err = wrapped(err)
        e[i] = err
        ed[i] = qd_d[i] - qd[i]
        if ki[i] > 0:
            integral[i] = min(max(integral[i] + err * dt, -integral_limit[i]), integral_limit[i])
        else:
            integral[i] = 0.0
        v[i] = qdd_d[i] + kd[i] * ed[i] + kp[i] * err + ki[i] * integral[i]
    return e, ed, v


@jit
def _finish(tau, e, ed, kp, kd, qd_d, friction, deadband, limits):
    """Every mode's end: the friction compensation added to tau, then the saturation."""
    for i in range(tau.shape[0]):
        if friction[i] > 0:  # the direction the law pulls in, fading out within the deadband
            pull, band = kp[i] * e[i] + kd[i] * qd_d[i], kp[i] * deadband
            tau[i] += friction[i] * friction_share(pull, band)
    return saturate(tau, limits), e, ed


def register_mode(name, torque):
    """Add a joint-space mode: `torque(mvec, mrot, ints, vecs, rots, mats, q, qd, q_d, qd_d,
    qdd_d, e, ed, v, integral, kp, kd, ki, damping, period, tau)`, compiled, fills tau (n,)
    before friction and saturation (the module docstring). The name joins MODES, which the
    controller's `mode` parameter, its checks and its goals read.
    """
    if name in MODES or name in (CARTESIAN_IMPEDANCE, TEACH):
        raise ValueError(f"mode {name!r} exists already")
    REGISTERED[name] = torque
    MODES.append(name)


class ControlLaw:
    """A control law with its parameters, named as in the module docstring.

    kp, kd: (n,) gains; ki, integral_limit: (n,) integral gain and clamp (default: off);
    limits: (n,) effort saturation (default none); friction_compensation adds the chain's
    damping and friction (see the module docstring) with friction_deadband (rad) and period (s).
    integral: (n,) the integral of e to start from (a law rebuilt with new gains or a new model
    passes the old one's `integral` on). Calling it with the state and the desired state, each
    (n,), and dt (s since the last call: the integral's step) returns (tau, e, ed): the torques
    and the errors they answer.
    """

    def __init__(self, chain, mode, kp, kd, limits=None, friction_compensation=False,
                 friction_deadband=DEFAULT_FRICTION_DEADBAND, period=DEFAULT_PERIOD, ki=0.0,
                 integral_limit=DEFAULT_INTEGRAL_LIMIT, integral=None):
        n = chain.n
        self.chain, self.mode = chain, check_mode(mode)
        compensated = friction_compensation
        # the per-joint settings, one array for the compiled law; kp, ... are its rows
        self.rows = np.empty((8, n))
        for row, value in ((KP, kp), (KD, kd), (KI, ki), (INTEGRAL_LIMIT, integral_limit),
                           (WRAP, chain.continuous), (LIMITS, np.inf if limits is None else limits),
                           (DAMPING, chain.damping if compensated else 0.0),
                           (FRICTION, chain.friction if compensated else 0.0)):
            self.rows[row] = np.broadcast_to(np.asarray(value, dtype=float), (n,))
        self.kp, self.kd, self.ki = self.rows[KP], self.rows[KD], self.rows[KI]
        self.integral_limit, self.wrap = self.rows[INTEGRAL_LIMIT], self.rows[WRAP]
        self.damping, self.friction = self.rows[DAMPING], self.rows[FRICTION]
        self.limits = self.rows[LIMITS]
        self.deadband, self.period = float(friction_deadband), float(period)
        self.integral = np.zeros(n) if integral is None else np.array(integral, dtype=float)
        self.integral[self.ki == 0] = 0.0  # ki set to 0 resets its integral
        self.data = Data(chain.pack)  # the law's workspace
        self._torque = REGISTERED.get(self.mode)
        values = np.array([MODES.index(self.mode), self.deadband, self.period], dtype=float)
        self._args = (*self.data.args, self.rows, values)

    def __call__(self, q, qd, q_d, qd_d, qdd_d, dt=0.0):
        c = self.chain
        q, qd = as_vector(c, q, "q"), as_vector(c, qd, "qd")
        q_d, qd_d, qdd_d = (as_vector(c, q_d, "q_d"), as_vector(c, qd_d, "qd_d"),
                            as_vector(c, qdd_d, "qdd_d"))
        if not self.registered:
            return _law(*self._args, q, qd, q_d, qd_d, qdd_d, self.integral, float(dt))
        return self._registered(q, qd, q_d, qd_d, qdd_d, float(dt))

    @property
    def registered(self):
        """Whether the mode is one register_mode added (its torque is compiled apart)."""
        return self._torque is not None

    def _registered(self, q, qd, q_d, qd_d, qdd_d, dt):
        """A registered mode: the shared errors, its torque, the shared friction and clip."""
        e, ed, v = _errors(self.kp, self.kd, self.ki, self.integral_limit, self.wrap, q,
                           qd, q_d, qd_d, qdd_d, self.integral, dt)
        tau = np.empty(self.chain.n)
        self._torque(*self.data.args, q, qd, q_d, qd_d, qdd_d, e, ed, v, self.integral,
                     self.kp, self.kd, self.ki, self.damping, self.period, tau)
        return _finish(tau, e, ed, self.kp, self.kd, qd_d, self.friction, self.deadband,
                       self.limits)

    @classmethod
    def gravity(cls, chain, limits):
        """The holding law: tau = g(q), saturated (gravity_pd with zero gains, called with the
        held position as the desired one).
        """
        zero = np.zeros(chain.n)
        return cls(chain, "gravity_pd", zero, zero, limits)


@jit
def _teach(mvec, mrot, ints, vecs, rots, mats, damping, friction, band, teach_damping, limits, q,
           qd):
    """The teach law of the module docstring -> tau (n,), saturated."""
    n = q.shape[0]
    model = (mvec, mrot, ints, vecs, rots, mats)
    tau, slowing = np.empty(n), np.empty(n)
    for i in range(n):
        slowing[i] = -teach_damping[i] * qd[i]
    newton_euler.inverse_dynamics(*model, q, qd, slowing, NO_WRENCH, tau)
    for i in range(n):
        tau[i] += damping[i] * qd[i] + friction[i] * friction_share(qd[i], band)
    return saturate(tau, limits)


class TeachLaw:
    """The teach law (module docstring): chain, teach_damping (n,) 1/s, limits (n,) saturation,
    friction_compensation (the URDF's damping and friction, or none). Called with (q, qd).
    """

    def __init__(self, chain, teach_damping, limits, friction_compensation=True):
        n = chain.n
        zero = np.zeros(n)
        self.chain, self.data = chain, Data(chain.pack)
        self._args = (*self.data.args,
                      chain.damping.copy() if friction_compensation else zero,
                      chain.friction.copy() if friction_compensation else zero.copy(),
                      TEACH_FRICTION_BAND, np.broadcast_to(teach_damping, (n,)).astype(float),
                      np.broadcast_to(limits, (n,)).astype(float))

    def __call__(self, q, qd):
        c = self.chain
        return _teach(*self._args, as_vector(c, q, "q"), as_vector(c, qd, "qd"))


def control_torque(chain, mode, q, qd, q_d, qd_d, qdd_d, kp, kd):
    """Joint torques (n,) N m or N of a mode, unsaturated and without friction compensation."""
    n = chain.n
    law = ControlLaw(chain, mode, gain_vector(kp, n, "kp"), gain_vector(kd, n, "kd"))
    return law(q, qd, q_d, qd_d, qdd_d)[0]



def rate_limits(limits, given, prismatic=None):
    """(n,) N m/s (N/s) per joint, inf: none. given: unset (None or []): the largest finite
    effort limit among the joints of each kind (prismatic: (n,) bool, default none) over
    EFFORT_RISE; else a scalar or one per joint (gain_vector), 0 meaning none.
    """
    n = len(limits)
    if given is None or (isinstance(given, (list, tuple)) and len(given) == 0):
        limits = np.asarray(limits, float)
        kinds = np.zeros(n, bool) if prismatic is None else np.asarray(prismatic, bool)
        rates = np.full(n, np.inf)
        for kind in (False, True):
            finite = limits[(kinds == kind) & np.isfinite(limits)]
            if finite.size:
                rates[kinds == kind] = finite.max() / EFFORT_RISE
        return rates
    rates = gain_vector(given, n, "max_effort_rate")
    return np.where(rates > 0, rates, np.inf)


def limit_rate(tau, previous, max_rate, dt):
    """Bound the change from `previous` to tau by max_rate * dt (N m/s, (n,) or a scalar, inf:
    none, from rate_limits; no time, no change). No previous command leaves tau as it is.
    """
    if previous is None:
        return tau
    if dt <= 0:
        return previous.copy()
    rates = np.asarray(max_rate, dtype=float)
    if rates.shape != tau.shape:  # a scalar rate
        rates = np.full(tau.shape, rates, dtype=float)
    return _bounded_change(tau, previous, rates, dt, np.empty(tau.shape[0]))


@jit
def _bounded_change(tau, previous, rates, dt, out):
    """Fill out with previous + clip(tau - previous, -step, step), step = rates dt, in one loop
    (np.clip's dispatch cost 2 us a tick), and return it; a NaN stays a NaN, as with np.clip,
    for the finite check after it.
    """
    for i in range(tau.shape[0]):
        step = rates[i] * dt
        change = tau[i] - previous[i]
        if change > step:
            change = step
        elif change < -step:
            change = -step
        out[i] = previous[i] + change
    return out


CHECK_STEP = 0.01  # s between the samples of a trajectory check (and every waypoint)


def trajectory_violation(chain, trajectory, limits, step=CHECK_STEP):
    """The first place a trajectory asks more than the arm has, as one line; None if nowhere.

    Samples every `step` s and every waypoint; at each, the torque the desired motion needs,
    ID(q_d, qd_d, qdd_d) (batched inverse dynamics of `chain`, payload included) plus the
    joint's damping and Coulomb friction at qd_d, against `limits` (n,) N m or N, and |qd_d|
    against the URDF velocity limits (model.as_limit). Joints in chain order.
    """
    t = trajectory.check_times(step)
    q, qd, qdd = trajectory.sample_many(t)
    tau = inverse_dynamics(chain, q, qd, qdd) + chain.damping * qd + chain.friction * np.sign(qd)
    velocity_limits = as_limit(chain.velocity_limits)
    found = []
    for name, value, limit, unit in (("torque", tau, limits, "N m"),
                                     ("velocity", qd, velocity_limits, "rad/s")):
        over = np.abs(value) > limit
        if over.any():
            k, i = np.unravel_index(np.argmax(over), over.shape)  # first sample, then joint
            found.append((t[k], i, name, value[k, i], limit[i], unit))
    if not found:
        return None
    time, i, name, value, limit, unit = min(found, key=lambda f: f[0])
    joint = chain.joints[i]
    if joint.type == "prismatic":
        unit = {"N m": "N", "rad/s": "m/s"}[unit]
    return (f"joint '{joint.name}' needs {name} {value:.4g} {unit} at t = "
            f"{time - trajectory.start_time:.3f} s from the trajectory's start, "
            f"limit {limit:.4g} {unit}")
