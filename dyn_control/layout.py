"""How the compiled kernels see a model and a workspace: the one place their layouts are written.

A kernel is called as `kernel(*model.pack, *data.arrays, inputs...)` (Pinocchio's
(model, data, ...), MuJoCo's (mjModel, mjData, ...)): two arrays for the model, three for the
workspace. Few arguments, because numba's dispatch costs about 0.1 us per argument, a tenth of
a small arm's inverse dynamics; and each quantity of the workspace is a contiguous block, as a
pass reading strided rows ran the mass matrix 1.8 times slower. Pure numpy: `model.Chain`
packs itself here at construction.

Model (immutable, one per chain; kernels read it):
- floats (n, MODEL_ROWS, 3), per body i: R0 rows R0..R0+2 (joint frame in the parent body at
  q_i = 0), its origin p0, the unit axis, h = mass * com, the inertia about the body origin
  (3 rows), [mass, 0, 0]; and in body 0's last row, GRAVITY_ROW, the base acceleration
  a0 = -gravity (base frame) that Newton-Euler starts from. A chain has at least one joint.
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

R0, P0, AXIS, H, INERTIA, MASS, GRAVITY_ROW = 0, 3, 4, 5, 6, 9, 10
MODEL_ROWS = 11
JTYPE, PARENT = 0, 1

POS, POS_WORLD, W, DW, DV, FORCE, MOMENT, C_H, C_MASS = range(9)
VECS = 9
ROT, ROT_WORLD, C_INERTIA = range(3)
ROTS = 3
VECTORS = 4


def pack_model(R0_, p0, axis, h, inertia_origin, mass, base_acceleration, jtype, parent):
    """The model's arrays -> (floats, ints), the layout above. Writable copies: numba types a
    read-only array on its slow dispatch path."""
    n = len(mass)
    floats = np.zeros((n, MODEL_ROWS, 3))
    floats[:, R0:R0 + 3], floats[:, P0], floats[:, AXIS] = R0_, p0, axis
    floats[:, H], floats[:, INERTIA:INERTIA + 3], floats[:, MASS, 0] = h, inertia_origin, mass
    floats[0, GRAVITY_ROW] = base_acceleration
    ints = np.array([jtype, parent], dtype=np.int64)
    return floats, ints


def with_gravity(pack, base_acceleration):
    """The same model with another base acceleration (a0 = -gravity, base frame): a copy."""
    floats = pack[0].copy()
    floats[0, GRAVITY_ROW] = base_acceleration
    return floats, pack[1]


class Data:
    """The workspace of one user of the kernels (module docstring) for a packed model: `arrays`
    (vecs, rots, matrices), and `args`, the model's and the workspace's arrays in the order a
    kernel takes them (kernel(*data.args, inputs...))."""

    def __init__(self, pack):
        self.n = pack[0].shape[0]
        self.arrays = workspace_arrays(self.n)
        self.args = (*pack, *self.arrays)


def workspace_arrays(n):
    """(vecs, rots, matrices), zeros."""
    return np.zeros((VECS, n, 3)), np.zeros((ROTS, n, 3, 3)), np.zeros((2 * n + 6 + VECTORS, n))
