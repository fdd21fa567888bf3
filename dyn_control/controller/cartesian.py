"""The Cartesian impedance / operational-space law: the formulas below are `_law`, compiled by
numba. Pure numpy, no ROS.

For the frame of `ee_link` at pose (R, p) in the base frame, with J its Jacobian (6, n) in base
axes at its origin ("local_world_aligned", rows [linear; angular]) and the target (R_d, p_d):

    e = [p_d - p; log(R_d R^T)]        (m, rad; each part clipped to its norm max_pose_error)
    F = K e - D J qd - Lambda Jdot qd + w       (impedance: a spring-damper on the pose)
    F = Lambda (K e - D J qd - Jdot qd) + w     (operational_space: inertia shaping)
    tau = J^T F + C(q, qd) qd + g(q) + N^T tau_n,  tau_n = K_n (q_n - q) - D_n qd

- Lambda = (J M^-1 J^T)^-1, by the damped least-squares inverse (kinematics.SINGULARITY_DAMPING
  on its eigenvalues), so it stays bounded at a singular pose and on arms of fewer than 6 joints.
  With operational_space the error obeys e'' + D e' + K e = 0 in every direction: a unit-mass
  spring-damper; without, Lambda e'' + D e' + K e = 0 (the arm's own inertia at the pose). The
  Jdot qd term is what leaves the task alone while the nullspace moves the arm.
- N = I - J-bar J with J-bar = M^-1 J^T Lambda, the dynamically consistent projector: the
  nullspace torque tau_n (a posture q_n) moves no task coordinate.
- w: a feed-forward wrench [force N; moment N m] in base axes, applied at the frame's origin.
- Damping left unset is critical: D = 2 sqrt(K) with operational_space (unit mass); without it
  critical for each mode of the arm's own inertia at the pose (critical_damping). Nullspace
  damping acts on the nullspace velocity N qd (so it only takes energy out); unset it is
  2 sqrt(K_n,i I_i), I_i = 1 / (M^-1)_ii the joint's effective inertia.
- friction_compensation adds, as the joint modes do at a target at rest, the URDF's Coulomb
  friction F_i clip(pull_i / band_i, -1, 1): pull the spring part of the command (J^T K' e +
  N^T K_n (q_n - q), K' = K or Lambda K), band_i its joint stiffness times friction_deadband,
  so it fades out within the deadband of the target. The joint damping B is compensated as
  computed_torque does, B (qd + T qdd) with qdd = M^-1 tau the commanded acceleration and T the
  control period, only with operational_space: the impedance law, like the PD modes, leaves
  it, which keeps a light, stiffly damped wrist stable at the control period.
At equilibrium under an external wrench w_x on the frame, J^T (K e + w_x) + N^T tau_n = 0 and
J-bar^T N^T = 0, so K e = -w_x: the static stiffness is K exactly (test_cartesian.py).
"""

import math

import numpy as np

from dyn_control.controller.laws import (
    friction_share,
    period_damping,
    saturate,
    wrapped,
)
from dyn_control.dynamics import mass_matrix
from dyn_control.kernels import mass_matrix as mass
from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.frames import (
    LOCAL_WORLD_ALIGNED,
    frame_bias_acceleration,
    frame_jacobian,
    frame_placement,
    kinematics,
)
from dyn_control.kernels.linalg import (
    cholesky_apply,
    cholesky_factor,
    compose_eigen,
    inverse_diagonal,
    matvec_into,
    operational_space_into,
    scaled_product,
    symmetric_eigen_into,
)
from dyn_control.kernels.newton_euler import NO_WRENCH, rnea
from dyn_control.kernels.so3 import rotation_log
from dyn_control.kinematics import SINGULARITY_DAMPING
from dyn_control.kinematics import frame_jacobian as link_jacobian
from dyn_control.model.layout import Data
from dyn_control.parameters import DEFAULT_CARTESIAN_STIFFNESS as DEFAULT_STIFFNESS
from dyn_control.parameters import (
    DEFAULT_MAX_POSE_ERROR,
    DEFAULT_NULLSPACE_STIFFNESS,
    gain_vector,
)


@jit
def _clip_norm(e, start, limit):
    """Scale e[start:start + 3] down to norm `limit` (> 0), keeping its direction."""
    norm = math.sqrt(e[start] ** 2 + e[start + 1] ** 2 + e[start + 2] ** 2)
    if limit > 0 and norm > limit:
        for k in range(start, start + 3):
            e[k] *= limit / norm


@jit
def critical_damping(K, gain, V, U, squares, vectors):
    """D (m, m) that damps each mode of Lambda x'' + D x' + K x = 0 critically, Lambda = V
    diag(gain) V^T (operational_space's eigenpairs): D = 2 L (L^-1 K L^-1)^(1/2) L with
    L = Lambda^(1/2) (in the coordinates L x the system is x'' + 2 B^(1/2) x' + B x = 0). A
    light mode (a wrist) gets the small damping its inertia takes at the control period,
    where a diagonal 2 sqrt(K_i Lambda_ii) would overdamp it into instability. A direction the
    arm cannot move in (an arm of fewer than 6 joints, a singular pose) has a gain of 0
    (linalg.damped_gains): no damping there (1 / its root amplified round-off into a torque of
    1e4 N m within one tick on example-robot-data's double pendulum).
    In V's coordinates, with root the roots of the gains: L = V diag(root) V^T, so B = V B' V^T
    with B' = diag(1/root) V^T K V diag(1/root), and D = 2 W diag(t) W^T, where B' = U
    diag(t^2) U^T and W = V diag(root) U. U (m, m): where the eigen-decomposition of B' starts,
    the last tick's (symmetric_eigen_into). squares (4, m, m) and vectors (3, m): its workspace;
    D is squares[3].
    """
    m = K.shape[0]
    root, inv_root = vectors[0], vectors[1]
    for i in range(m):
        root[i] = math.sqrt(gain[i]) if gain[i] > 0 else 0.0
        inv_root[i] = 1.0 / root[i] if root[i] > 0 else 0.0
    B = compose_eigen(V.T, K, squares[0])  # V^T K V, then B'
    for r in range(m):
        for c in range(m):
            B[r, c] *= inv_root[r] * inv_root[c]
    t, U = symmetric_eigen_into(B, U, squares[1], squares[2], vectors[2])
    W = scaled_product(V, root, U.T, squares[1])
    for i in range(m):
        t[i] = 2.0 * math.sqrt(max(t[i], 0.0))
    return compose_eigen(W, t, squares[3])


@jit
def pose_error(R, p, R_d, p_d, max_error, e, Rerr):
    """Fill e (6,) with [p_d - p; log(R_d R^T)], m and rad, base axes, each part clipped to its
    norm max_error (2,) (0: no clip), and return it. Rerr (3, 3): its workspace.
    """
    for r in range(3):
        e[r] = p_d[r] - p[r]
        for c in range(3):
            Rerr[r, c] = R_d[r, 0] * R[c, 0] + R_d[r, 1] * R[c, 1] + R_d[r, 2] * R[c, 2]
    w = rotation_log(Rerr)
    for k in range(3):
        e[3 + k] = w[k]
    _clip_norm(e, 0, max_error[0])
    _clip_norm(e, 3, max_error[1])
    return e




# the rows of the law's per-joint array (6, n) and the entries of its values
NULLSPACE_STIFFNESS, NULLSPACE_DAMPING, WRAP, JOINT_DAMPING, FRICTION, LIMITS = range(6)
OPERATIONAL, MAX_POSITION_ERROR, MAX_ROTATION_ERROR, DEADBAND, PERIOD, SINGULARITY = range(6)
# the law's workspace besides the model's (CartesianLaw.work): how many of each shape
SQUARES, VECTORS, COLUMNS, WIDE, ROTATIONS = 9, 19, 9, 2, 2


@jit
def _law(mvec, mrot, ints, vecs, rots, mats, frame_bodies, R_offs, p_offs, gains, joints, values,
         bases, squares, vectors, columns, wide, tall, rotations, q, qd, R_d, p_d, w, q_n):
    """The law of the module docstring -> (tau (n,), e (6 f,)), for f frames (frame_bodies
    (f,), R_offs (f, 3, 3), p_offs (f, 3): each link's pose in its body) and their targets R_d
    (f, 3, 3), p_d (f, 3); w (6 f,). CartesianLaw's settings as plain arrays (numba unboxes a
    NamedTuple field by field, 1.9 us a call): gains (2, 6 f), the stiffness K and the damping
    D (negative: unset, critical); joints (6, n), rows NULLSPACE_STIFFNESS.. LIMITS (WRAP: 1 on a
    continuous joint, whose error wraps; the damping and friction to compensate, zeros: none);
    values, entries OPERATIONAL.. SINGULARITY (the error norms' clip: 0 none); bases (2, 6 f,
    6 f): the last call's eigenvectors, of J M^-1 J^T and of critical_damping's B, where this
    call's decompositions start (a tick moves the pose little: on the Panda 4 Jacobi sweeps
    instead of 5). One kinematics pass fills the workspace's poses, which M, the bias, the
    frames' Jacobians and J-dot qd then read. squares (SQUARES, 6 f, 6 f), vectors (VECTORS,
    6 f), columns (COLUMNS, n), wide (WIDE, 6 f, n), tall (n, 6 f), rotations (ROTATIONS, 3,
    3): the arrays a tick fills, so that it allocates only e; tau is columns[0], valid until
    the next call.
    """
    K, D = gains[0], gains[1]
    Kn, Dn, wrap = joints[NULLSPACE_STIFFNESS], joints[NULLSPACE_DAMPING], joints[WRAP]
    damping_b, friction, limits = joints[JOINT_DAMPING], joints[FRICTION], joints[LIMITS]
    operational = values[OPERATIONAL] != 0.0
    max_error = values[MAX_POSITION_ERROR:MAX_ROTATION_ERROR + 1]
    deadband, period = values[DEADBAND], values[PERIOD]
    n, f = q.shape[0], frame_bodies.shape[0]
    m = 6 * f
    model, data = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(model, data, q)
    mass.columns(model, data, data.M)
    tau = columns[0]  # C qd + g to start with
    rnea(model, data, qd, data.vectors[1], model.a0, NO_WRENCH, tau)  # (columns left it zero)
    L = cholesky_factor(data.M, data.L)
    Rf, pf, J1 = rotations[0], vectors[0][:3], data.J
    J, e, jdqd, one = wide[0], np.empty(m), vectors[1], vectors[2][:6]
    for k in range(f):  # each frame's rows: Jacobian, pose error, Jdot qd
        frame_placement(data, frame_bodies[k], R_offs[k], p_offs[k], Rf, pf)
        frame_jacobian(model, data, frame_bodies[k], Rf, pf, LOCAL_WORLD_ALIGNED, J1)
        ek = pose_error(Rf, pf, R_d[k], p_d[k], max_error, vectors[3][:6], rotations[1])
        frame_bias_acceleration(model, data, qd, frame_bodies[k], pf, one)
        for r in range(6):
            e[6 * k + r], jdqd[6 * k + r] = ek[r], one[r]
            for c in range(n):
                J[6 * k + r, c] = J1[r, c]
    MinvJt, Lam, gain, V = operational_space_into(L, J, values[SINGULARITY], bases[0], tall,
                                                  squares[0:4], vectors[4:6])
    compensate_damping = False
    for i in range(n):
        compensate_damping = compensate_damping or damping_b[i] > 0
    if not operational:  # Lambda Jdot qd, so that Lambda x'' + D x' = K e + (an outside wrench)
        jdqd = matvec_into(Lam, jdqd, vectors[6])
    Dm = squares[4]
    Dm[:] = 0.0
    if D[0] >= 0:
        for k in range(m):
            Dm[k, k] = D[k]
    elif operational:  # unit mass
        for k in range(m):
            Dm[k, k] = 2.0 * math.sqrt(K[k])
    else:
        Dm = critical_damping(K, gain, V, bases[1], squares[5:9], vectors[7:10])
    spring, F, xd = vectors[10], vectors[11], matvec_into(J, qd, vectors[12])
    damp = matvec_into(Dm, xd, vectors[13])
    for k in range(m):
        spring[k], F[k] = K[k] * e[k], K[k] * e[k] - damp[k] - jdqd[k]
    if operational:  # F <- Lambda F, and the spring part likewise (for friction's pull)
        F, spring = matvec_into(Lam, F, vectors[14]), matvec_into(Lam, spring, vectors[15])
    for k in range(m):
        F[k] += w[k]
    # each joint's effective inertia 1 / (M^-1)_ii (the others free), for the nullspace damping
    inertia = columns[1]
    inverse_diagonal(L, columns[2], inertia)
    for i in range(n):
        inertia[i] = 1.0 / inertia[i]
    # the nullspace velocity N qd = qd - J-bar J qd; its damping only takes energy out
    moved = matvec_into(MinvJt, matvec_into(Lam, xd, vectors[16]), columns[3])
    tau_n, pull_n = columns[4], columns[5]
    for i in range(n):
        err = q_n[i] - q[i]
        if wrap[i] != 0.0:
            err = wrapped(err)
        dn = Dn[i] if Dn[i] >= 0 else 2.0 * math.sqrt(Kn[i] * inertia[i])
        pull_n[i] = Kn[i] * err
        tau_n[i] = pull_n[i] - dn * (qd[i] - moved[i])
    # N^T x = x - J^T Lambda (M^-1 J^T)^T x, for the nullspace torque and its spring part
    Mt = wide[1]
    for k in range(m):
        for i in range(n):
            Mt[k, i] = MinvJt[i, k]
    z = matvec_into(Lam, matvec_into(Mt, tau_n, vectors[16]), vectors[17])
    z_pull = matvec_into(Lam, matvec_into(Mt, pull_n, vectors[16]), vectors[18])
    command, pull = columns[6], columns[7]
    for i in range(n):
        command[i], pull[i] = tau_n[i], pull_n[i]
        for k in range(m):
            command[i] += J[k, i] * (F[k] - z[k])
            pull[i] += J[k, i] * (spring[k] - z_pull[k])
    if compensate_damping:  # the joint damping over one control period, as computed_torque
        qdd = cholesky_apply(L, command, columns[8])
        for i in range(n):
            tau[i] += period_damping(damping_b[i], qd[i], qdd[i], period, inertia[i])
    for i in range(n):
        tau[i] += command[i]
        if friction[i] > 0:  # the direction the law pulls in, fading out within the deadband
            stiffness = Kn[i]
            for k in range(m):
                stiffness += J[k, i] * J[k, i] * K[k] * (Lam[k, k] if operational else 1.0)
            band = stiffness * deadband
            tau[i] += friction[i] * friction_share(pull[i], band)
    return saturate(tau, limits), e


class CartesianLaw:
    """The law of the module docstring for one chain and one or several frames, with its
    parameters.

    ee_link: the frame's link (default: the tip link), or a list of links: one task per link,
    stacked in one Jacobian with one nullspace (two hands of a tree, say). stiffness: K, 6
    values (N/m then N m/rad) for every frame, or 6 per frame; damping likewise, or None
    (critical); nullspace_stiffness and nullspace_damping: a scalar or one per joint (chain
    order), damping None critical; operational_space: inertia shaping; max_pose_error: (m, rad)
    clip of each frame's error norms (0: none); limits (n,): effort saturation;
    friction_compensation with friction_deadband (rad). ValueError names a bad value. Calling
    it with the state (q, qd), the targets (R_d (3, 3) and p_d (3,), or (f, 3, 3) and (f, 3)),
    the feed-forward wrenches w (6 f,) and the posture q_n (n,) returns (tau, e (6 f,)).
    """

    def __init__(self, chain, ee_link=None, stiffness=DEFAULT_STIFFNESS, damping=None,
                 nullspace_stiffness=DEFAULT_NULLSPACE_STIFFNESS, nullspace_damping=None,
                 operational_space=False, max_pose_error=DEFAULT_MAX_POSE_ERROR, limits=None,
                 friction_compensation=False, friction_deadband=1e-4, period=1e-3,
                 singularity_damping=SINGULARITY_DAMPING):
        n = chain.n
        one = not ee_link or isinstance(ee_link, str)
        links = [ee_link or chain.tip_link] if one else list(ee_link)
        self.chain, self.ee_links = chain, tuple(links)
        self.ee_link = links[0]
        frames = [chain.frame(link, "ee_link") for link in links]
        f = len(frames)
        self.K = per_frame(stiffness, f, "cartesian_stiffness")
        self.D = (np.full(6 * f, -1.0) if damping is None
                  else per_frame(damping, f, "cartesian_damping"))
        self.Kn = gain_vector(nullspace_stiffness, n, "nullspace_stiffness")
        self.Dn = (np.full(n, -1.0) if nullspace_damping is None
                   else gain_vector(nullspace_damping, n, "nullspace_damping"))
        self.max_error = gain_vector(max_pose_error, 2, "max_pose_error")
        self.limits = np.full(n, np.inf) if limits is None else np.asarray(limits, dtype=float)
        compensated = friction_compensation
        # the damping only where the law commands accelerations (operational_space), as
        # computed_torque; the impedance law leaves it, as the PD modes do at rest: it is what
        # keeps a light, stiffly damped wrist (Tiago: 4e-6 kg m^2, 1 N m s/rad) stable at 1 kHz
        self.joint_damping = (chain.damping.copy() if compensated and operational_space
                              else np.zeros(n))
        self.friction = chain.friction.copy() if compensated else np.zeros(n)
        self.operational_space = bool(operational_space)
        bodies = np.array([body for body, _, _ in frames], dtype=np.int64)
        R_offs = np.array([R for _, R, _ in frames]).reshape(f, 3, 3)
        p_offs = np.array([p for _, _, p in frames]).reshape(f, 3)
        self.data = Data(chain.pack)  # the law's workspace
        joints = np.array([self.Kn, self.Dn, chain.continuous, self.joint_damping, self.friction,
                           self.limits], dtype=float)
        values = np.array([self.operational_space, *self.max_error, friction_deadband, period,
                           singularity_damping], dtype=float)
        self.bases = np.array([np.eye(6 * f)] * 2)  # (_law)
        m = 6 * f
        # what a tick fills besides the model's workspace (_law's squares... rotations)
        self.work = (np.zeros((SQUARES, m, m)), np.zeros((VECTORS, m)), np.zeros((COLUMNS, n)),
                     np.zeros((WIDE, m, n)), np.zeros((n, m)), np.zeros((ROTATIONS, 3, 3)))
        self._args = (*self.data.args, bodies, R_offs, p_offs, np.array([self.K, self.D]), joints,
                      values, self.bases, *self.work)

    def __call__(self, q, qd, R_d, p_d, w, q_n):
        tau, e = _law(*self._args, q, qd, *self.targets(R_d, p_d, w), q_n)
        return tau.copy(), e  # tau is the workspace's

    def targets(self, R_d, p_d, w):
        """The targets as the compiled law takes them: (f, 3, 3), (f, 3), (6 f,)."""
        f = len(self.ee_links)
        # the arrays' own reshape: np.reshape's dispatch cost 0.6 us a call, three a tick
        R_d, p_d, w = np.asarray(R_d), np.asarray(p_d), np.asarray(w)
        return R_d.reshape(f, 3, 3), p_d.reshape(f, 3), w.reshape(6 * f)

    def jacobian(self, q):
        """(6 f, n): the frames' Jacobians, stacked, in base axes at their origins."""
        return np.vstack([link_jacobian(self.chain, q, link) for link in self.ee_links])

    def fastest_mode(self, q):
        """rad/s: the highest natural frequency of the undamped task at q, the square root of
        the largest eigenvalue of K^1/2 (J M^-1 J^T) K^1/2 (the modes of Lambda x'' + K x = 0,
        with no inverse: a singular direction, where the arm cannot move, has none);
        operational_space: sqrt(max K), unit mass. Above 1/period the sampled loop can
        oscillate on a light arm.
        """
        if self.operational_space:
            return float(np.sqrt(self.K.max()))
        J = self.jacobian(q)
        A = J @ np.linalg.solve(mass_matrix(self.chain, q), J.T)
        root = np.sqrt(self.K)
        return float(np.sqrt(max(np.linalg.eigvalsh(root[:, None] * A * root).max(), 0.0)))


def per_frame(values, frames, name):
    """6 gains for every frame, or 6 per frame -> (6 frames,); ValueError names `name`."""
    flat = np.ravel(np.asarray(values, dtype=float))
    if frames > 1 and flat.size == 6 * frames:
        return gain_vector(flat, 6 * frames, name)
    if frames > 1 and flat.size not in (1, 6):
        raise ValueError(f"{name} must be a scalar, 6 values or 6 per ee_link ({6 * frames}), "
                         f"got {flat.tolist()}")
    return np.tile(gain_vector(values, 6, name), frames)
