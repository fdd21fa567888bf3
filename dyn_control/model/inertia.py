"""Rigid-body inertia algebra: checks of a body's inertia, the parallel-axis theorem, and two
bodies lumped into one. Plain numpy.
"""

import numpy as np

INERTIA_RTOL = 1e-6  # relative slack of the symmetry / PSD / triangle-inequality checks


def check_inertia(what, mass, inertia):
    """Return a list of problems with one body's inertial data (empty if valid); `what` names
    the body in the messages ("link 'x'").
    """
    problems = []
    if not np.isfinite(mass) or not np.all(np.isfinite(inertia)):
        return [f"{what}: non-finite mass or inertia (mass={mass}, inertia={inertia.tolist()})"]
    if mass < 0:
        problems.append(f"{what}: negative mass {mass:g} kg")
    scale = max(np.abs(inertia).max(), 1e-12)
    if np.abs(inertia - inertia.T).max() > INERTIA_RTOL * scale:
        problems.append(f"{what}: inertia tensor not symmetric: {inertia.tolist()}")
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if eig[0] < -INERTIA_RTOL * scale:
        problems.append(
            f"{what}: inertia tensor not positive semi-definite, "
            f"principal moments {np.round(eig, 12).tolist()}")
    elif eig[0] + eig[1] < eig[2] - INERTIA_RTOL * scale:
        problems.append(
            f"{what}: principal moments {np.round(eig, 12).tolist()} break the triangle "
            f"inequality I1 + I2 >= I3 ({eig[0] + eig[1]:.6g} < {eig[2]:.6g})")
    return problems


def parallel_axis(mass, d):
    """(3, 3) kg m^2 to add to an inertia about the centre of mass to take it about a point at
    -d from it (d (3,) m, the com seen from that point): m (|d|^2 I - d d^T).
    """
    return mass * (d @ d * np.eye(3) - np.outer(d, d))


def combine_bodies(a, b):
    """Two rigid bodies (mass kg, com (3,) m, inertia (3, 3) about the com), both in one frame
    -> the one rigid body they make, in that frame (parallel-axis theorem).
    """
    (m1, c1, I1), (m2, c2, I2) = a, b
    mass = m1 + m2
    com = (m1 * c1 + m2 * c2) / mass if mass > 0 else np.zeros(3)
    inertia = I1 + I2
    for m, c in ((m1, c1), (m2, c2)):
        inertia = inertia + parallel_axis(m, c - com)
    return mass, com, 0.5 * (inertia + inertia.T)


def inertia_matrix(ixx, iyy, izz, ixy, ixz, iyz):
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)
