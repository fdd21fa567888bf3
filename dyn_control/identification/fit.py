"""Identification of an arm's inertial and friction parameters, pure numpy over the
compiled kernels: the joint torque regressor, the parameter vector, the base parameters, the
fits (least squares, weighted, Huber, physically consistent) and the identified URDF.

    tau = Y(q, qd, qdd) pi,   pi = (pi_1 ... pi_n, viscous (n), Coulomb (n), offset (n))

pi_i, body i's 10 inertial parameters in its own frame (the joint's), in Pinocchio's order:
m, m c (3), then the inertia about the frame origin xx, xy, yy, xz, yz, zz. The friction
columns are those the simulator and the controller use: viscous qd, Coulomb sign(qd) (the
URDF's <dynamics damping friction>), and a constant offset per joint.
"""

from typing import NamedTuple

import numpy as np

from dyn_control.dynamics import as_vector
from dyn_control.kernels import regressor as kernel

INERTIAL = 10  # parameters per body
FRICTION = ("viscous", "coulomb", "offset")  # columns per joint, after the inertial ones
NAMES = ("m", "mx", "my", "mz", "ixx", "ixy", "iyy", "ixz", "iyz", "izz")
TIE = 1e-9  # pivoted_qr: column norms this close (relative, squared) are a tie


def regressor(chain, q, qd, qdd, friction=True):
    """Y (n, 10 n [+ 3 n]) with tau = Y pi at (q, qd, qdd): the inverse dynamics' torques with
    the model's gravity, plus, with friction, viscous, Coulomb and offset columns.
    """
    n = chain.n
    q, qd, qdd = (as_vector(chain, x, name) for x, name in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
    Y = np.zeros((n, (INERTIAL + (len(FRICTION) if friction else 0)) * n))
    kernel.joint_torque_regressor(*chain.workspace().args, q, qd, qdd, Y[:, :INERTIAL * n])
    if friction:
        k = np.arange(n)
        Y[k, INERTIAL * n + k] = qd
        Y[k, (INERTIAL + 1) * n + k] = np.sign(qd)
        Y[k, (INERTIAL + 2) * n + k] = 1.0
    return Y


def parameters(chain, friction=True):
    """pi (10 n [+ 3 n]) of a chain: each body's inertial parameters, then the joints' damping
    as viscous, friction as Coulomb, and a zero offset.
    """
    I = chain.inertia_origin  # noqa: E741 (the inertia, as the formulas name it)
    inertial = np.column_stack([chain.mass, chain.h, I[:, 0, 0], I[:, 0, 1], I[:, 1, 1],
                                I[:, 0, 2], I[:, 1, 2], I[:, 2, 2]]).ravel()
    if not friction:
        return inertial
    return np.concatenate([inertial, chain.damping, chain.friction, np.zeros(chain.n)])


def parameter_names(chain, friction=True):
    """A name per entry of pi: "<joint>.<m|mx|...|izz>", then "<joint>.<viscous|...>"."""
    names = [f"{joint}.{p}" for joint in chain.joint_names for p in NAMES]
    if friction:
        names += [f"{joint}.{kind}" for kind in FRICTION for joint in chain.joint_names]
    return names


def pivoted_qr(W):
    """(R (k, c), order (c,)) of W (m, c), k its rank, by Gram-Schmidt with column pivoting
    (each step takes the remaining column of largest norm, as LAPACK's geqp3), orthogonalized
    twice: W[:, order] = Q R. The rank counts the steps whose column norm is above
    max(m, c) eps times the first, as numpy's matrix_rank counts singular values.

    Among columns whose norms tie, to TIE relative, the last of W's is taken: a regressor's
    do tie exactly (a body's ixx, iyy and izz columns, once those taken before are removed),
    and left to argmax, the rounding of the BLAS in use chose among them, so the base
    parameters, the excitation optimized for them and all identified from it changed with
    the machine's OpenBLAS kernel (OPENBLAS_CORETYPE). Any rule among ties gives valid base
    parameters; this one is fixed so that every machine identifies alike.
    """
    A = np.array(W, dtype=float)
    m, c = A.shape
    order, R, Q = np.arange(c), np.zeros((min(m, c), c)), np.zeros((m, min(m, c)))
    first = None
    for k in range(min(m, c)):
        norms = np.einsum("ij,ij->j", A[:, k:], A[:, k:])
        tied = np.flatnonzero(norms >= (1.0 - TIE) * norms.max())
        j = k + int(tied[np.argmax(order[k + tied])])
        A[:, [k, j]], R[:, [k, j]], order[[k, j]] = A[:, [j, k]], R[:, [j, k]], order[[j, k]]
        v = A[:, k] - Q[:, :k] @ (Q[:, :k].T @ A[:, k])  # the second pass
        r = np.linalg.norm(v)
        first = r if first is None else first
        if r <= max(m, c) * np.finfo(float).eps * first:
            return R[:k], order
        Q[:, k] = v / r
        R[k, k], R[k, k + 1:] = r, Q[:, k] @ A[:, k + 1:]
        A[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])
    return R, order


class BaseParameters:
    """The identifiable combinations of pi (Gautier's base parameters) from the regressor
    stacked at `samples` random states within the joint limits: W[:, order] = Q R by
    pivoted_qr, rank k. The first k columns of `order` are independent; each other column is a
    combination of them, W_d = W_i K with K = R_ii^-1 R_id. So W pi = W_i beta, with
        beta = pi[independent] + K pi[dependent]     (`of(pi)`)
    `regrouping` says each beta as text, for instance "joint2.izz + 1 joint3.m + ...", with the
    entries of K below 1e-10 of its largest dropped.
    """

    def __init__(self, chain, friction=True, samples=100, seed=0):
        rng = np.random.default_rng(seed)
        low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
        high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
        W = np.vstack([regressor(chain, rng.uniform(low, high), rng.uniform(-2, 2, chain.n),
                                 rng.uniform(-5, 5, chain.n), friction)
                       for _ in range(samples)])
        R, order = pivoted_qr(W)
        k = len(R)
        self.independent, self.dependent = order[:k], order[k:]
        self.K = np.linalg.solve(R[:, :k], R[:, k:]) if k else np.zeros((0, len(order) - k))
        self.K[np.abs(self.K) < 1e-10 * max(np.abs(self.K).max(initial=0.0), 1.0)] = 0.0
        names = parameter_names(chain, friction)
        self.regrouping = [
            " + ".join([names[i]] + [f"{g:.6g} {names[d]}" for g, d in zip(row, self.dependent)
                                     if g != 0.0])
            for i, row in zip(self.independent, self.K)]

    def of(self, pi):
        """beta (k,) of a full parameter vector pi."""
        pi = np.asarray(pi, dtype=float)
        return pi[self.independent] + self.K @ pi[self.dependent]

    def columns(self, Y):
        """Y[..., independent], the regressor's columns of the base parameters."""
        return Y[..., self.independent]


class Fit(NamedTuple):
    beta: np.ndarray  # (k,) the estimates
    covariance: np.ndarray  # (k, k) theirs, from the weighted rows

    @property
    def relative_std(self):
        """Each estimate's standard deviation over its |value| (inf where it is 0)."""
        with np.errstate(divide="ignore"):
            return np.sqrt(np.diag(self.covariance)) / np.abs(self.beta)


def fit(W, tau, n, weighted=True):
    """Fit from stacked regressor rows W (m n, k), each sample's n joints in turn, and the
    torques tau (m n,). Least squares; weighted, it is solved again with each joint's rows
    divided by the standard deviation of that joint's residual in the first solve (joints
    differ in noise and in scale). The covariance is (W_w^T W_w)^-1 of those weighted rows,
    whose noise then has unit variance (for the plain fit too: an approximation there).
    """
    beta, sigma = joint_noise(W, tau, n)
    rows = W / sigma[:, None]
    if weighted:
        beta = np.linalg.lstsq(rows, tau / sigma, rcond=None)[0]
    return Fit(beta, np.linalg.inv(rows.T @ rows))


def joint_noise(W, tau, n):
    """(beta, sigma): the plain least-squares fit, and per row the standard deviation of its
    joint's residual there (m n,), floored at machine precision for a noise-free fit.
    """
    beta = np.linalg.lstsq(W, tau, rcond=None)[0]
    residual = (tau - W @ beta).reshape(-1, n)
    dof = max(residual.shape[0] - np.linalg.matrix_rank(W) / n, 1.0)  # each joint's share
    floor = np.finfo(float).eps * max(np.abs(tau).max(), 1.0)
    sigma = np.maximum(np.sqrt((residual ** 2).sum(axis=0) / dof), floor)
    return beta, np.tile(sigma, len(tau) // n)


def huber_weights(rows, target, n, threshold=1.345, rounds=5):
    """A weight in (0, 1] per row of the joint-weighted rows (m n, c) and target: Huber's, by
    iteratively reweighted least squares. A row whose residual is more than `threshold` robust
    standard deviations of its joint's (1.4826 x the median |residual|) counts as if it were
    that far, so a few rows the model cannot explain do not pull the fit. Those are the rows
    just after a joint breaks away from sticking: the filtered qdd and the sign of qd both miss
    friction's jump there, by up to 1 N m for 40 ms on the perturbed truth of the identification
    tests, and one such row moved the closed-loop error by 40 %. 1.345 keeps 95 % of least squares'
    efficiency on Gaussian noise.
    """
    weights = np.ones(len(target))
    for _ in range(rounds):
        beta = np.linalg.lstsq(rows * weights[:, None], target * weights, rcond=None)[0]
        residual = np.abs(target - rows @ beta).reshape(-1, n)
        scale = np.maximum(1.4826 * np.median(residual, axis=0), np.finfo(float).tiny)
        weights = np.sqrt(np.minimum(1.0, threshold * scale / np.maximum(residual, 1e-300)))
        weights = weights.ravel()
    return weights


def perturbed(chain, seed, tool_mass=1.0, tool_offset=0.08):
    """A physically consistent "real arm" made from a model, as the identification tests make it:
    each body's mass x U(0.7, 1.3), its centre of mass moved by up to 2 cm, its rotational
    inertia about it x U(0.6, 1.6) (a positive scale keeps the triangle inequalities); a tool
    of tool_mass kg tool_offset m along the tip link's z; viscous 0.5 to 3 N m s/rad and Coulomb
    1 to 5 N m on the proximal half of the joints.
    """
    from dataclasses import replace
    rng = np.random.default_rng(seed)
    n = chain.n
    direction = rng.normal(size=(n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    mass = chain.mass * rng.uniform(0.7, 1.3, n)
    com = chain.com + direction * rng.uniform(0.0, 0.02, (n, 1))
    inertia = chain.inertia * rng.uniform(0.6, 1.6, (n, 1, 1))
    proximal = (n + 1) // 2
    joints = tuple(
        replace(j, damping=float(rng.uniform(0.5, 3.0)), friction=float(rng.uniform(1.0, 5.0)))
        if i < proximal else j for i, j in enumerate(chain.joints))
    truth = replace(chain, mass=mass, com=com, inertia=inertia, joints=joints)
    radius = 0.03  # the tool as a solid sphere
    sphere = 0.4 * tool_mass * radius ** 2
    return truth.with_payload(tool_mass, (0.0, 0.0, tool_offset), (sphere, sphere, sphere,
                                                                   0.0, 0.0, 0.0))


def _pseudo_inertia_svec(n_params):
    """(10, 10): column k is svec(E_k) of the 4 x 4 pseudo-inertia [[tr(I)/2 1 - I, h],
    [h^T, m]] of a body's parameters (m, h, xx, xy, yy, xz, yz, zz), in Clarabel's svec order
    (the upper triangle column by column, off-diagonal entries times sqrt 2).
    """
    E = np.zeros((10, 4, 4))
    E[0, 3, 3] = 1.0  # m
    for c in range(3):  # h
        E[1 + c, c, 3] = E[1 + c, 3, c] = 1.0
    for k, (r, s) in enumerate(((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))):
        inertia = np.zeros((3, 3))
        inertia[r, s] = inertia[s, r] = 1.0
        E[4 + k, :3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    upper = [(r, c) for c in range(4) for r in range(c + 1)]
    return np.array([[E[k, r, c] * (1.0 if r == c else np.sqrt(2.0)) for k in range(n_params)]
                     for r, c in upper])


def row_sigma(W, tau, n):
    """Each row's standard deviation as consistent_fit weighs it (m n,): its joint's residual
    (joint_noise), divided by the row's huber_weights.
    """
    _, sigma = joint_noise(W, tau, n)
    return sigma / huber_weights(W / sigma[:, None], tau / sigma, n)


def consistent_fit(W, tau, n, nominal, regularization=1e-8, sigma=None):
    """pi (10 n + 3 n) of least residual on the full regressor rows W (m n, 13 n) and tau,
    subject to physical consistency: each body's 4 x 4 pseudo-inertia positive semidefinite
    (its mass, centre of mass and inertia a real body's, Wensing et al. 2017) and viscous and
    Coulomb friction >= 0. Row r is divided by sigma[r] (default row_sigma: as `fit` weighs
    them, each joint by the standard deviation of its plain least-squares residual, then by
    huber_weights). The full pi is not identifiable: a small
    pull towards `nominal` (regularization times the mean diagonal of W^T W) picks the
    physical solution nearest the model in the directions the data cannot see.

    Solved as a semidefinite program by Clarabel (an interior-point conic solver: pinned, no
    other dependency than scipy's sparse matrices); ValueError when it does not converge.
    """
    import clarabel
    from scipy import sparse

    sigma = row_sigma(W, tau, n) if sigma is None else sigma
    rows, target = W / sigma[:, None], tau / sigma
    count = W.shape[1]
    nominal = np.asarray(nominal, dtype=float)
    # in the step from the nominal, delta, and the residual r = R delta - c of the rows' QR:
    # |rows pi - target|^2 = |r|^2 + what no pi reaches, so the objective is the part of the
    # residual the fit decides. Written in pi and the Gram matrix, it was that less |tau|^2,
    # 5e9 times more on a clean recording, and the solver's relative tolerance left the
    # residual at twice the true parameters'.
    Q, R = np.linalg.qr(rows)
    c = Q.T @ target - R @ nominal
    weight = regularization * np.trace(R.T @ R) / count
    P = sparse.diags(np.concatenate([np.full(count, weight), np.ones(count)])).tocsc()
    blocks = [np.hstack([R, -np.eye(count)])]  # R delta - r = c
    offsets, cones = [c], [clarabel.ZeroConeT(count)]
    svec = _pseudo_inertia_svec(INERTIAL)
    for i in range(n):  # Clarabel's slack s = b - A x in the cone: s = svec(J(nominal + delta))
        A = np.zeros((10, 2 * count))
        A[:, INERTIAL * i:INERTIAL * (i + 1)] = -svec
        blocks.append(A)
        offsets.append(-A[:, :count] @ nominal)
        cones.append(clarabel.PSDTriangleConeT(4))
    A = np.zeros((2 * n, 2 * count))  # viscous and Coulomb >= 0
    A[np.arange(2 * n), INERTIAL * n + np.arange(2 * n)] = -1.0
    blocks.append(A)
    offsets.append(-A[:, :count] @ nominal)
    cones.append(clarabel.NonnegativeConeT(2 * n))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    solution = clarabel.DefaultSolver(P, np.zeros(2 * count), sparse.csc_matrix(np.vstack(blocks)),
                                      np.concatenate(offsets), cones, settings).solve()
    if str(solution.status) not in ("Solved", "AlmostSolved"):
        raise ValueError(f"the physically consistent fit did not converge: {solution.status}")
    return nominal + np.array(solution.x)[:count]


def body_inertials(pi, n):
    """Each body's (mass kg, centre of mass (3,) m, inertia about it (3, 3)) in its frame, of
    the inertial part of pi; a body of no mass keeps its inertia about the origin.
    """
    from dyn_control.model.inertia import inertia_matrix, parallel_axis
    out = []
    for i in range(n):
        m, h = pi[INERTIAL * i], pi[INERTIAL * i + 1:INERTIAL * i + 4]
        xx, xy, yy, xz, yz, zz = pi[INERTIAL * i + 4:INERTIAL * (i + 1)]
        about_origin = inertia_matrix(xx, yy, zz, xy, xz, yz)
        if m <= 0.0:
            out.append((0.0, np.zeros(3), about_origin))
            continue
        c = h / m
        out.append((float(m), c, about_origin - parallel_axis(m, c)))
    return out


def identified_urdf(source, chain, pi):
    """The URDF `source` (what load_chain took) with pi's bodies and friction: each body's
    inertial on the first link of the body (the joint's child link, whose frame is the body's)
    and none on the links lumped into it (fixed children, locked fingers: their share is in the
    fit); each joint's <dynamics damping> the viscous term and `friction` the Coulomb term. The
    offsets have no place in a URDF and are left out. Everything else is kept as it was.
    """
    from xml.etree import ElementTree

    from dyn_control.model.urdf import read_urdf_text, robot_element, top_level
    robot = robot_element(read_urdf_text(source))
    links, joints = top_level(robot, "link"), top_level(robot, "joint")
    n = chain.n
    for (m, c, inertia), names in zip(body_inertials(pi, n), chain.lumped_links):
        for name in names:
            for old in links[name].findall("inertial"):
                links[name].remove(old)
        inertial = ElementTree.SubElement(links[names[0]], "inertial")
        ElementTree.SubElement(inertial, "origin", xyz=" ".join(f"{v:.12g}" for v in c),
                               rpy="0 0 0")
        ElementTree.SubElement(inertial, "mass", value=f"{m:.12g}")
        ElementTree.SubElement(inertial, "inertia", **{
            key: f"{inertia[r, s]:.12g}" for key, (r, s) in (
                ("ixx", (0, 0)), ("ixy", (0, 1)), ("ixz", (0, 2)), ("iyy", (1, 1)),
                ("iyz", (1, 2)), ("izz", (2, 2)))})
    friction = pi[INERTIAL * n:(INERTIAL + 2) * n].reshape(2, n)  # viscous, Coulomb
    for name, b, f in zip(chain.joint_names, *friction):
        dynamics = joints[name].find("dynamics")
        if dynamics is None:
            dynamics = ElementTree.SubElement(joints[name], "dynamics")
        dynamics.set("damping", f"{max(b, 0.0):.12g}")
        dynamics.set("friction", f"{max(f, 0.0):.12g}")
    return ElementTree.tostring(robot, encoding="unicode")
