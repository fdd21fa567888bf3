"""Kinematics of the links a `Chain` moves: poses, Jacobians, J-dot qd, and the operational-space
inertia. Pure numpy plus the compiled kernels (dyn_control.kernels.frames), no ROS.

A link is any link the chain moves, its lumped fixed children included (tools, flanges, tool0):
Chain.frame names its body and its fixed pose there. Poses are in the chain's base frame (the
root link's). Spatial vectors and Jacobian rows are [linear (3); angular (3)], and a Jacobian is
in one of Pinocchio's three reference frames (`reference`):
- "local_world_aligned" (default): the velocity of the link's origin and the angular velocity,
  in base axes. What the Cartesian law uses, with errors in base axes.
- "local": the same two vectors in the link's own axes.
- "world": the velocity of the point at the base origin moving with the link, and the angular
  velocity, in base axes (Pinocchio's spatial velocity in WORLD).
Arrays: q, qd (n,) in the chain's joint order; units rad, m, s, kg.
"""

import numpy as np

from dyn_control.dynamics import as_vector, mass_matrix
from dyn_control.kernels import frames, linalg, so3

REFERENCES = {"world": frames.WORLD, "local": frames.LOCAL,
              "local_world_aligned": frames.LOCAL_WORLD_ALIGNED}
# Damping of the damped least-squares inverse (eigenvalues of J M^-1 J^T, 1/kg and 1/(kg m^2)):
# an eigenvalue s becomes s / (s^2 + d^2), so Lambda's effective mass in a singular direction
# stays below 1 / (2 d) = 500 kg, while one of 0.1 1/kg (10 kg) is off by (d / s)^2 = 1e-4.
SINGULARITY_DAMPING = 1e-3


def _frame(chain, link):
    return chain.frame(chain.tip_link if link is None else link)


def _reference(reference):
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
    return REFERENCES[reference]


def frame_pose(chain, q, link=None):
    """(R (3, 3), p (3,) m): the pose of `link` (default: the tip link) in the base frame."""
    R, p, _ = frame_pose_and_jacobian(chain, q, link)
    return R, p


def frame_jacobian(chain, q, link=None, reference="local_world_aligned"):
    """J (6, n): the spatial velocity of `link` per joint rate, in `reference` (module
    docstring). A joint that does not move the link has a zero column.
    """
    return frame_pose_and_jacobian(chain, q, link, reference)[2]


def frame_pose_and_jacobian(chain, q, link=None, reference="local_world_aligned"):
    """(R, p, J) in one compiled call: the pose and the Jacobian (frame_pose, frame_jacobian)."""
    body, R_off, p_off = _frame(chain, link)
    code = _reference(reference)
    found = chain.entry.frame_pose_and_jacobian(q, body, R_off, p_off, code)  # C; None: q
    if found is not None:  # needs converting, or naming
        return found
    R, p, J = np.empty((3, 3)), np.empty(3), np.empty((6, chain.n))
    frames.frame_pose_and_jacobian(*chain.workspace().args, as_vector(chain, q, "q"),
                                   body, R_off, p_off, code, R, p, J)
    return R, p, J


def frame_classical_acceleration(chain, q, qd, link=None, reference="local_world_aligned"):
    """J-dot qd (6,): the classical acceleration of `link`'s origin and its angular
    acceleration when qdd = 0, gravity off, in base axes ("local_world_aligned") or the link's
    ("local"). Pinocchio's getFrameClassicalAcceleration at qdd = 0.
    """
    if reference not in ("local", "local_world_aligned"):
        raise ValueError(f"reference must be local or local_world_aligned, got {reference!r}")
    body, R_off, p_off = _frame(chain, link)
    out, R, p = np.empty(6), np.empty((3, 3)), np.empty(3)
    frames.frame_acceleration(*chain.workspace().args, as_vector(chain, q, "q"),
                              as_vector(chain, qd, "qd"), body, R_off, p_off, R, p, out)
    return out if reference == "local_world_aligned" else np.concatenate([R.T @ out[:3],
                                                                          R.T @ out[3:]])


def rotation_log(R):
    """Rotation matrix (3, 3) -> rotation vector (3,) rad: the log map of SO(3), angle in
    [0, pi] times the unit axis.
    """
    return np.array(so3.rotation_log(np.ascontiguousarray(R, dtype=float)))


def rotation_exp(w):
    """Rotation vector (3,) rad -> rotation matrix (3, 3) (Rodrigues): the inverse of
    rotation_log.
    """
    w = np.asarray(w, dtype=float)
    angle = np.linalg.norm(w)
    K = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    if angle < 1e-9:
        return np.eye(3) + K
    return np.eye(3) + np.sin(angle) / angle * K + (1 - np.cos(angle)) / angle**2 * K @ K


def quaternion_matrix(x, y, z, w):
    """Unit quaternion (x, y, z, w) -> rotation matrix (3, 3)."""
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_quaternion(R):
    """Rotation matrix (3, 3) -> unit quaternion (x, y, z, w), w >= 0 (Shepperd: from the
    largest of the four squared components, for accuracy at any angle).
    """
    t = R[0, 0] + R[1, 1] + R[2, 2]
    if t > 0:
        s = 2 * np.sqrt(1 + t)
        q = ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, s / 4)
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2 * np.sqrt(1 + R[0, 0] - R[1, 1] - R[2, 2])
        q = (s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s, (R[2, 1] - R[1, 2]) / s)
    elif R[1, 1] > R[2, 2]:
        s = 2 * np.sqrt(1 + R[1, 1] - R[0, 0] - R[2, 2])
        q = ((R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s, (R[0, 2] - R[2, 0]) / s)
    else:
        s = 2 * np.sqrt(1 + R[2, 2] - R[0, 0] - R[1, 1])
        q = ((R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4, (R[1, 0] - R[0, 1]) / s)
    return tuple(float(c) for c in (q if q[3] >= 0 else np.negative(q)))


def manipulability(J):
    """Yoshikawa's measure sqrt(det(J J^T)) of a Jacobian (m, n) (sqrt(det(J^T J)) for
    n < m): 0 at a singular pose.
    """
    A = J @ J.T if J.shape[1] >= J.shape[0] else J.T @ J
    return float(np.sqrt(max(np.linalg.det(A), 0.0)))


def damped_inverse(A, damping=SINGULARITY_DAMPING):
    """The damped least-squares inverse of a symmetric positive semi-definite matrix (m, m):
    each eigenvalue s becomes s / (s^2 + damping^2); damping 0: the pseudo-inverse. One under
    1e-12 of the largest is round-off, and becomes 0 (linalg.damped_gains).
    """
    A = np.ascontiguousarray(A, dtype=float)
    return linalg.damped_inverse(0.5 * (A + A.T), float(damping), np.empty_like(A))


def _factor(chain, q):
    """L, the Cholesky factor of M(q) (mass_matrix's, by columns)."""
    return linalg.cholesky_factor(mass_matrix(chain, q), np.empty((chain.n, chain.n)))


def operational_space_inertia(chain, q, link=None, damping=SINGULARITY_DAMPING):
    """Lambda (6, 6) = (J M^-1 J^T)^-1 of `link` (J local_world_aligned), kg and kg m^2, by the
    damped inverse: bounded near a singular pose, and for arms of fewer than 6 joints.
    """
    J = frame_jacobian(chain, q, link)
    return linalg.operational_space(_factor(chain, q), J, float(damping))[1]


def dynamically_consistent_inverse(chain, q, link=None, damping=SINGULARITY_DAMPING):
    """J-bar (n, 6) = M^-1 J^T Lambda: the generalized inverse of J that leaves the task's
    acceleration alone. N = I - J-bar J projects torques as N^T tau into the task's
    nullspace.
    """
    J = frame_jacobian(chain, q, link)
    MinvJt, Lam, _, _ = linalg.operational_space(_factor(chain, q), J, float(damping))
    return MinvJt @ Lam
