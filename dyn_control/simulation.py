"""Forward-dynamics simulation of a chain with a fixed step; pure numpy plus one compiled step.

A step splits the dynamics in two (simulation_step, below):
1. the smooth part, M q'' = tau - C(q, q') q' - g(q), by classical RK4 with tau held over the
   step;
2. the passive joints, implicitly, as MuJoCo does: damping folded into the mass matrix,
   (M + dt B) v = M v_rk4 - dt f, Coulomb friction as a bounded force f (|f_i| <= friction_i,
   a joint inside its band sticks) and each position limit as a stop that only pushes out.
   passive_velocity solves that exactly; it can only take kinetic energy out.

Why this scheme:
- Real URDFs put heavy damping on light links (xArm7: 10 N m s/rad on 1.4e-4 kg m^2, a time
  constant of 14 us against a 1 ms step), where damping inside an explicit step diverges, and
  friction as friction * sign(q') chatters and adds energy. Taken implicitly, neither can: in
  a fall with no input K + P rises by no more than integration error on every arm of
  example-robot-data (test/test_passive_physics.py).
- Without damping, friction or a limit reached, step 2 is the identity, so the undamped
  accuracy is RK4's (docs/simulator.md). Semi-implicit Euler (integrator
  semi_implicit_euler) is kept for comparison; it drifts far more.
- The compiled step is a few tens of microseconds for 7 joints (four forward dynamics, one
  mass matrix; `make bench`). Its mass matrices come from the composite-rigid-body pass
  (kernels._mass_matrix_crba): equal to the controller's inverse-dynamics columns to
  round-off, in one pass instead of n, and computed by other code than the controller's.

Applied effort is saturated to the effort limits. A step that produces a non-finite state is
undone: the state goes back to the last finite one, at rest, and `step` says so.

A push (`push`) is an external wrench on a link: J^T w joins the motor torques, unsaturated,
with J the link's Jacobian at the step's start (it is held over the step, as the torque is).
"""

import numpy as np

from . import kernels
from .control import all_finite, saturate
from .kernels import jit
from .dynamics import mass_matrix
from .kinematics import frame_jacobian

INTEGRATORS = ("rk4", "semi_implicit_euler")
DEFAULT_DT = 1e-3  # s


@jit
def passive_velocity(M, v_free, damping, friction, dt, v_min, v_max):
    """Velocity after one step of joint damping, Coulomb friction and position limits, all
    taken implicitly (as impulses over the step).

    Solves (M + dt B) v = M v_free - dt f + mu: |f_i| <= friction_i with f_i = friction_i
    sign(v_i) where v_i != 0 (a joint inside its friction band sticks), and mu the impulse of
    a joint stop, which keeps v_i within [v_min_i, v_max_i] (0 on the side of a limit the joint
    is at, infinite otherwise). That is the minimum over the box of the strictly convex
    1/2 v^T (M + dt B) v - v^T M v_free + dt sum friction_i |v_i|, found by exact coordinate
    descent (soft thresholding, then clipping), which converges for any positive definite M.
    At the minimum v^T M v <= v_free^T M v_free: the step only takes kinetic energy out.
    M: (n, n); v_free, damping (N m s/rad), friction (N m), v_min, v_max: (n,). Returns v (n,).
    """
    n = v_free.shape[0]
    A = M.copy()
    b = np.empty(n)
    for i in range(n):
        A[i, i] += dt * damping[i]
        s = 0.0
        for j in range(n):
            s += M[i, j] * v_free[j]
        b[i] = s
    v = kernels.cholesky_solve(A, b)  # the answer when no joint has friction or is at a stop
    smooth = True
    for i in range(n):
        smooth = smooth and friction[i] == 0.0 and v_min[i] <= v[i] <= v_max[i]
    if smooth:
        return v
    scale = 1e-300
    for i in range(n):
        scale = max(scale, abs(v[i]), abs(v_free[i]))
    for _ in range(10000):
        change = 0.0
        for i in range(n):
            r = b[i]
            for j in range(n):
                if j != i:
                    r -= A[i, j] * v[j]
            band = dt * friction[i]
            new = (r - band) / A[i, i] if r > band else ((r + band) / A[i, i] if r < -band else 0.0)
            new = min(max(new, v_min[i]), v_max[i])
            change = max(change, abs(new - v[i]))
            v[i] = new
        if change <= 1e-14 * scale:
            break
    return v


@jit
def simulation_step(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, tau, damping, friction,
                    lower, upper, dt, a0, rk4):
    """One step of the arm under joint torques tau -> (q, qd) after dt.

    The smooth dynamics (tau, gravity, Coriolis) is integrated by RK4 (rk4 true) or explicit
    Euler in velocity; damping, friction and the stops of joints that reached a position limit
    (lower, upper: (n,), infinite for none) then act implicitly through passive_velocity with M
    at the new position. After RK4 the position takes half the step's passive velocity change,
    as if that change grew linearly over the step (RK4's position already holds dt^2/2 of the
    free acceleration); after Euler it takes all of it (q += dt v, semi-implicit). Either way
    a joint that sticks stays exactly where it was, and a joint at its damping-limited speed
    tau/B moves dt tau/B. A joint past a limit is put back on it.
    """
    zero6 = np.zeros(6)
    if rk4:
        k1v = qd
        k1a = kernels.forward_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, k1v,
                                       tau, a0, zero6)
        k2v = qd + 0.5 * dt * k1a
        k2a = kernels.forward_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o,
                                       q + 0.5 * dt * k1v, k2v, tau, a0, zero6)
        k3v = qd + 0.5 * dt * k2a
        k3a = kernels.forward_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o,
                                       q + 0.5 * dt * k2v, k3v, tau, a0, zero6)
        k4v = qd + dt * k3a
        k4a = kernels.forward_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o,
                                       q + dt * k3v, k4v, tau, a0, zero6)
        q_free = q + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        v_free = qd + dt / 6.0 * (k1a + 2.0 * k2a + 2.0 * k3a + k4a)
        share = 0.5
    else:
        v_free = qd + dt * kernels.forward_dynamics(R0, p0, axis, jtype, parent, mass, h,
                                                    inertia_o, q, qd, tau, a0, zero6)
        q_free = q + dt * v_free
        share = 1.0
    n = q.shape[0]
    v_min, v_max = np.full(n, -np.inf), np.full(n, np.inf)
    for i in range(n):
        if q_free[i] <= lower[i]:
            v_min[i] = 0.0
        if q_free[i] >= upper[i]:
            v_max[i] = 0.0
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    kernels.joint_poses(R0, p0, axis, jtype, q_free, R, p)
    M = np.empty((n, n))
    kernels._mass_matrix_crba(R, p, axis, jtype, parent, mass, h, inertia_o, M)
    v = passive_velocity(M, v_free, damping, friction, dt, v_min, v_max)
    q_next = q_free + share * dt * (v - v_free)
    for i in range(n):
        q_next[i] = min(max(q_next[i], lower[i]), upper[i])
    return q_next, v


@jit
def simulation_step_packed(floats, ints, q, qd, tau, damping, friction, lower, upper, dt, a0, rk4):
    R0, p0, axis, jtype, parent, mass, h, inertia_o = kernels.unpack(floats, ints)
    return simulation_step(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, tau, damping,
                           friction, lower, upper, dt, a0, rk4)


def default_initial_positions(chain):
    """Zeros, or the middle of the position limits where zero lies outside them."""
    low, high = chain.position_min, chain.position_max
    outside = (low > 0) | (high < 0)  # (then both are finite)
    with np.errstate(invalid="ignore"):  # -inf + inf where unlimited, not chosen
        return np.where(outside, 0.5 * (low + high), 0.0)


def stiff_joints(chain, q, dt=DEFAULT_DT):
    """Joints whose damping alone would settle within one step: [(index, inertia, tau_c)].

    inertia: the joint's effective inertia 1 / (M^-1)_ii at q (kg m^2 or kg, the others free);
    tau_c = inertia / damping (s), the damping's time constant, listed when shorter than dt.
    An explicit integrator is unstable there (Euler needs dt < 2 tau_c); the step here takes
    damping implicitly, but a simulator or a velocity-feedback loop that does not, will not cope.
    """
    inertia = 1.0 / np.diag(np.linalg.inv(mass_matrix(chain, q)))
    with np.errstate(divide="ignore"):
        tau_c = inertia / chain.damping
    return [(i, inertia[i], tau_c[i]) for i in np.flatnonzero(tau_c < dt)]


class Simulation:
    """State (q, qd) at time t of a chain driven by joint torques.

    q0: (n,) initial positions; dt: step (s); effort_limits: (n,) N m or N (inf: none).
    """

    def __init__(self, chain, q0, dt=DEFAULT_DT, effort_limits=None, integrator="rk4"):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        self.chain = chain
        self.dt = float(dt)
        self.integrator = integrator
        self.q = np.array(q0, dtype=float)
        if self.q.shape != (chain.n,) or not np.all(np.isfinite(self.q)):
            raise ValueError(f"q0 must be {chain.n} finite values, got {self.q.tolist()}")
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"dt must be > 0 s, got {dt}")
        self.qd = np.zeros(chain.n)
        self.tau = np.zeros(chain.n)  # applied, after saturation
        self.t = 0.0
        self.steps = 0
        self.blowups = 0  # steps undone because the state became non-finite
        self.effort_limits = (np.full(chain.n, np.inf) if effort_limits is None
                              else np.asarray(effort_limits, dtype=float))
        # the stops the step enforces (the chain's cleaned bounds; chain.lower/upper are the URDF's)
        self.position_min, self.position_max = (chain.position_min.copy(),
                                                chain.position_max.copy())
        self.damping, self.friction = chain.damping.copy(), chain.friction.copy()
        self.external = None  # (link, wrench (6,)) of a push

    def push(self, wrench, link=None):
        """From the next step on, until the next push: the wrench (6,) [force N; moment N m],
        base axes, applied at the origin of `link` (default: the tip link; any link the chain
        moves). A zero wrench ends the push. ValueError names a bad link or value."""
        wrench = np.array(wrench, dtype=float).reshape(-1)
        if wrench.shape != (6,) or not np.all(np.isfinite(wrench)):
            raise ValueError(f"a push is 6 finite values (force N, moment N m), got {wrench.tolist()}")
        link = link or self.chain.tip_link
        self.chain.frame(link)
        self.external = (link, wrench) if np.any(wrench) else None

    def step(self, tau):
        """Advance one dt with joint torques tau (n,), saturated to the effort limits.

        Returns True, or False when the step blew up (non-finite state, or a mass matrix that
        is no longer positive definite): then the arm is put back at its last finite position,
        at rest, and time still advances.
        """
        self.tau = saturate(np.array(tau, dtype=float), self.effort_limits)
        applied = self.tau
        if self.external is not None:
            link, wrench = self.external
            applied = self.tau + frame_jacobian(self.chain, self.q, link).T @ wrench
        try:
            q, qd = simulation_step_packed(
                *self.chain.kernel_pack, self.q, self.qd, applied, self.damping, self.friction,
                self.position_min, self.position_max, self.dt, self.chain.kernel_a0,
                self.integrator == "rk4")
            finite = all_finite(q) and all_finite(qd)
        except ValueError:  # Cholesky of a non-finite or indefinite mass matrix
            finite = False
        if not finite:
            q, qd = self.q, np.zeros_like(self.qd)
            self.tau = np.zeros_like(self.tau)
            self.blowups += 1
        self.q, self.qd = q, qd
        self.steps += 1
        self.t = self.steps * self.dt
        return finite

    def hold(self):
        """Advance one dt with the joints braked: time passes, the arm does not move."""
        self.qd = np.zeros_like(self.qd)
        self.tau = np.zeros_like(self.tau)
        self.steps += 1
        self.t = self.steps * self.dt
