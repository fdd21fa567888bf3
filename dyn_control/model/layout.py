"""How the compiled kernels see a model and a workspace: the one place their layouts are written.

A kernel is called as `kernel(*data.args, inputs...)`, data.args being the model's three
arrays and the workspace's three (Pinocchio's (model, data, ...), MuJoCo's (mjModel, mjData,
...)). Few arguments, because numba's dispatch costs about 0.06 us per argument; and each
quantity is a contiguous block, as passes reading strided rows ran the mass matrix's columns
1.5 us slower on a 7-joint arm. Pure numpy: `model.Chain` packs itself here at construction.

Model (immutable, one per chain; kernels read it):
- mvec (MODEL_VECS, n, 3), a 3-vector per body in each block: the origin P0 of joint i's frame
  in the parent body at q_i = 0, the unit AXIS, H = mass * com, [MASS, 0, 0]; and the GRAVITY
  block's first row, the base acceleration a0 = -gravity (base frame) that Newton-Euler starts
  from (a chain has at least one joint).
- mrot (MODEL_ROTS, n, 3, 3): R0, joint i's frame in the parent body at q_i = 0, and INERTIA,
  the body's inertia about its origin.
- ints (2, n): JTYPE (REVOLUTE or PRISMATIC) and PARENT (body i's parent, -1 for the base).

Data (a workspace, written by every call; one per user: a law, the simulator, a thread):
- vecs (VECS, n, 3), a 3-vector per body in each block: its origin in its parent POS and in
  the base frame POS_WORLD, the Newton-Euler pass's angular velocity W, angular acceleration
  DW, linear acceleration DV and the wrench FORCE, MOMENT its children pass down, and the
  composite body of the mass-matrix pass: first moment C_H, mass C_MASS (first column).
- rots (ROTS, n, 3, 3), a 3x3 per body in each block: its rotation in its parent ROT, in the
  base frame ROT_WORLD, and the composite inertia C_INERTIA.
- matrices (2 n + 6 + VECTORS, n): M (n rows), its Cholesky factor L (n rows), a frame
  Jacobian J (6 rows), then VECTORS rows of n for the kernels' vectors.
"""

import numpy as np

REVOLUTE, PRISMATIC = 0, 1  # joint types, as the kernels test them

P0, AXIS, H, MASS, GRAVITY = range(5)
MODEL_VECS = 5
R0, INERTIA = range(2)
MODEL_ROTS = 2
JTYPE, PARENT = 0, 1

POS, POS_WORLD, W, DW, DV, FORCE, MOMENT, C_H, C_MASS = range(9)
VECS = 9
ROT, ROT_WORLD, C_INERTIA = range(3)
ROTS = 3
VECTORS = 4


def pack_model(R0_, p0, axis, h, inertia_origin, mass, base_acceleration, jtype, parent):
    """The model's arrays -> (mvec, mrot, ints), the layout above. Writable copies: numba types
    a read-only array on its slow dispatch path.
    """
    n = len(mass)
    mvec, mrot = np.zeros((MODEL_VECS, n, 3)), np.zeros((MODEL_ROTS, n, 3, 3))
    mvec[P0], mvec[AXIS], mvec[H], mvec[MASS, :, 0] = p0, axis, h, mass
    mvec[GRAVITY, 0] = base_acceleration
    mrot[R0], mrot[INERTIA] = R0_, inertia_origin
    return mvec, mrot, np.array([jtype, parent], dtype=np.int64)


def with_gravity(pack, base_acceleration):
    """The same model with another base acceleration (a0 = -gravity, base frame): a copy."""
    mvec = pack[0].copy()
    mvec[GRAVITY, 0] = base_acceleration
    return (mvec, *pack[1:])


class Data:
    """The workspace of one user of the kernels (module docstring) for a packed model: `arrays`
    (vecs, rots, matrices), and `args`, the model's and the workspace's arrays in the order a
    kernel takes them (kernel(*data.args, inputs...)).
    """

    def __init__(self, pack):
        self.arrays = workspace_arrays(pack[0].shape[1])
        self.args = (*pack, *self.arrays)


def workspace_arrays(n):
    """(vecs, rots, matrices), zeros."""
    return np.zeros((VECS, n, 3)), np.zeros((ROTS, n, 3, 3)), np.zeros((2 * n + 6 + VECTORS, n))


F64 = np.dtype(np.float64)  # a singleton: `is` is the cheapest dtype check


def plain_vectors(q, qd, x):
    """Whether q, qd and x are float64 arrays of one dimension, the control loop's case: they go
    to the kernels as they are (their lengths the kernel checks). One chained test: three
    conversions cost more than the kernel's own work on a small arm.
    """
    try:
        return q.dtype is qd.dtype is x.dtype is F64 and q.ndim == qd.ndim == x.ndim == 1
    except AttributeError:  # not arrays
        return False
