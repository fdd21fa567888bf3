"""The calls users make most, inverse_dynamics, mass_matrix and a frame's pose and Jacobian,
and the simulator's step, entered from C.

numba's dispatcher types and unboxes every array of a call: for inverse dynamics' ten that
costs more than the Newton-Euler pass of a 7-joint arm (docs/benchmarks.md). Here the passes are
compiled as C functions (numba cfuncs, cached as the kernels are) that take raw pointers and n
and make the kernels' arrays over them (carray: no copy, shapes from n and the layout's
constants), and the package's C module (dyn_control/_calls.c) calls them after one buffer check
per array. `entry(pack)` is one model's: the C module's Entry over a workspace of its own, or,
where the module or numba is missing, the same methods over numba's dispatcher.
"""

import threading

import numpy as np

from dyn_control.kernels import frames, newton_euler, passive
from dyn_control.kernels import mass_matrix as mass
from dyn_control.kernels.compile import HAVE_NUMBA
from dyn_control.model.layout import (
    MODEL_ROTS,
    MODEL_VECS,
    ROTS,
    VECS,
    VECTORS,
    Data,
    plain_vectors,
    workspace_arrays,
)

if HAVE_NUMBA:
    from numba import carray, cfunc, types

    from dyn_control.kernels.compile import jit

    F64, I64 = types.CPointer(types.float64), types.CPointer(types.int64)
    MODEL = (F64, F64, I64, F64, F64, F64, types.intp)  # the six arrays' data, and n

    @jit
    def _arrays(mvec, mrot, ints, vecs, rots, mats, n):
        """The model's and the workspace's arrays over their pointers (model.layout)."""
        return (carray(mvec, (MODEL_VECS, n, 3)), carray(mrot, (MODEL_ROTS, n, 3, 3)),
                carray(ints, (2, n)), carray(vecs, (VECS, n, 3)), carray(rots, (ROTS, n, 3, 3)),
                carray(mats, (2 * n + 6 + VECTORS, n)))

    @cfunc(types.int32(*MODEL, F64, F64, F64, F64), cache=True)
    def _rnea(mvec, mrot, ints, vecs, rots, mats, n, q, qd, qdd, tau):
        return newton_euler.inverse_dynamics_plain(
            *_arrays(mvec, mrot, ints, vecs, rots, mats, n), carray(q, n), carray(qd, n),
            carray(qdd, n), carray(tau, n))

    @cfunc(types.int32(*MODEL, F64, F64), cache=True)
    def _mass(mvec, mrot, ints, vecs, rots, mats, n, q, M):
        return mass.mass_matrix(*_arrays(mvec, mrot, ints, vecs, rots, mats, n), carray(q, n),
                                carray(M, (n, n)))

    @cfunc(types.int32(*MODEL, F64, types.intp, F64, F64, types.intp, F64, F64, F64), cache=True)
    def _frame(mvec, mrot, ints, vecs, rots, mats, n, q, body, R_off, p_off, reference, R, p, J):
        frames.frame_pose_and_jacobian(
            *_arrays(mvec, mrot, ints, vecs, rots, mats, n), carray(q, n), body,
            carray(R_off, (3, 3)), carray(p_off, 3), reference, carray(R, (3, 3)), carray(p, 3),
            carray(J, (6, n)))
        return 1

    @jit
    def _step_into(arrays, q, qd, tau, damping, friction, lower, upper, dt, rk4, q_out, qd_out):
        """The step into q_out, qd_out; whether every value came out finite."""
        mvec, mrot, ints, vecs, rots, mats = arrays
        q_out[:], qd_out[:] = passive.simulation_step(
            mvec, mrot, ints, vecs, rots, mats, q, qd, tau, damping, friction, lower, upper, dt,
            rk4)
        return np.isfinite(q_out).all() and np.isfinite(qd_out).all()

    @cfunc(types.int32(*MODEL, F64, F64, F64, F64, F64, F64, F64, types.float64, types.int32,
                       F64, F64), cache=True)
    def _step(mvec, mrot, ints, vecs, rots, mats, n, q, qd, tau, damping, friction, lower, upper,
              dt, rk4, q_out, qd_out):
        arrays = _arrays(mvec, mrot, ints, vecs, rots, mats, n)
        # a cfunc cannot raise: 0 (it raised, or a value came out non-finite: a blow-up) sends
        # the caller to the dispatcher, which raises or gives the same numbers to check
        try:
            finite = _step_into(arrays, carray(q, n), carray(qd, n), carray(tau, n),
                                carray(damping, n), carray(friction, n), carray(lower, n),
                                carray(upper, n), dt, rk4 != 0, carray(q_out, n),
                                carray(qd_out, n))
        except Exception:  # noqa: BLE001 - numba catches only this broadly
            return 0
        return 1 if finite else 0


def entry(pack):
    """The entry points of the model `pack` (Chain.pack) over a workspace of their own."""
    if HAVE_NUMBA:
        try:
            from dyn_control import _calls
        except ImportError:  # not built (a source tree used as is): numba's dispatcher
            _calls = None
        if _calls is not None:
            arrays = (*pack, *workspace_arrays(pack[0].shape[1]))
            return _calls.Entry((_rnea.address, _mass.address, _frame.address, _step.address),
                                pack[0].shape[1], arrays, np.empty)
    return DispatcherEntry(pack)


class DispatcherEntry:
    """The same methods over numba's dispatcher, with a workspace per thread (the kernels
    release the GIL).
    """

    def __init__(self, pack):
        self.pack, self.n, self.local = pack, pack[0].shape[1], threading.local()

    def _args(self):
        try:
            return self.local.data.args
        except AttributeError:
            self.local.data = Data(self.pack)
            return self.local.data.args

    def inverse_dynamics(self, q, qd, qdd):
        if not plain_vectors(q, qd, qdd):
            return None
        tau = np.empty(self.n)
        return tau if newton_euler.inverse_dynamics_plain(*self._args(), q, qd, qdd, tau) else None

    def mass_matrix(self, q):
        if not plain_vectors(q, q, q):
            return None
        M = np.empty((self.n, self.n))
        return M if mass.mass_matrix(*self._args(), q, M) else None

    def simulation_step(self, q, qd, tau, damping, friction, lower, upper, dt, rk4):
        return passive.simulation_step(*self._args(), q, qd, tau, damping, friction, lower,
                                       upper, dt, rk4)

    def frame_pose_and_jacobian(self, q, body, R_off, p_off, reference):
        if not plain_vectors(q, q, q) or len(q) != self.n:
            return None
        R, p, J = np.empty((3, 3)), np.empty(3), np.empty((6, self.n))
        frames.frame_pose_and_jacobian(*self._args(), q, body, R_off, p_off, reference, R, p, J)
        return R, p, J
