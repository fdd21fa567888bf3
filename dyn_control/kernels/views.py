"""The model and a workspace as the kernels name them: named tuples of views into the packed
arrays of dyn_control.model.layout (slices, no copies). A kernel called from Python makes them once
(`model`, `data`) and hands them to the passes it runs: a view costs a reference count, and
making them in every pass cost a 7-joint arm's mass matrix 2 us in 6.
"""

from collections import namedtuple

from dyn_control.kernels.compile import jit
from dyn_control.model.layout import (
    AXIS,
    C_H,
    C_INERTIA,
    C_MASS,
    DV,
    DW,
    FORCE,
    GRAVITY,
    INERTIA,
    JTYPE,
    MASS,
    MOMENT,
    P0,
    PARENT,
    POS,
    POS_WORLD,
    R0,
    ROT,
    ROT_WORLD,
    H,
    W,
)

# R0 (n, 3, 3), p0, axis (n, 3), jtype, parent (n,), mass (n,), h (n, 3), inertia_o (n, 3, 3),
# a0 (3,): layout's docstring
ModelView = namedtuple("ModelView", "R0 p0 axis jtype parent mass h inertia_o a0")
# R, p each body in its parent; Rw, pw in the base frame; the Newton-Euler pass's w, dw, dv and
# wrench f, mo; the composite bodies' cI, ch, cm; M, its factor L, a Jacobian J (6, n), and
# `vectors` (VECTORS, n) of scratch
DataView = namedtuple("DataView", "R p Rw pw w dw dv f mo cI ch cm M L J vectors")
# what the Newton-Euler passes read and write (rnea, and M's columns), as DataView names it: a
# kernel that only runs them makes these 8 views, not 16 (each costs a reference count: 0.18 us
# for all 16)
PassView = namedtuple("PassView", "R p w dw dv f mo vectors")


@jit
def model(mvec, mrot, ints):
    return ModelView(mrot[R0], mvec[P0], mvec[AXIS], ints[JTYPE], ints[PARENT], mvec[MASS, :, 0],
                     mvec[H], mrot[INERTIA], mvec[GRAVITY, 0])


@jit
def data(vecs, rots, mats):
    n = vecs.shape[1]
    return DataView(rots[ROT], vecs[POS], rots[ROT_WORLD], vecs[POS_WORLD], vecs[W], vecs[DW],
                    vecs[DV], vecs[FORCE], vecs[MOMENT], rots[C_INERTIA], vecs[C_H],
                    vecs[C_MASS, :, 0], mats[0:n], mats[n:2 * n], mats[2 * n:2 * n + 6],
                    mats[2 * n + 6:])


@jit
def newton_euler(vecs, rots, mats):
    n = vecs.shape[1]
    return PassView(rots[ROT], vecs[POS], vecs[W], vecs[DW], vecs[DV], vecs[FORCE], vecs[MOMENT],
                    mats[2 * n + 6:])
