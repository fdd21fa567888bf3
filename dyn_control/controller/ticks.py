"""What a tick runs between the state and its command, in one compiled call for each mode: the
law (controller.laws, controller.cartesian) and the limits stage after it (limits.finish) over
the law's workspace, entered from C.

    e, ed, found = joint_tick(law, q, qd, (q_d, qd_d, qdd_d), dt, limits)
    e, found = cartesian_tick(law, q, qd, R_d, p_d, w, q_n, limits)
    found = teach_tick(law, q, qd, limits)

limits: (stage, share, walls, previous, since), the guard's limits.Stage and the tick's soft
start share, whether the walls act, the last command (None: none) and the time since it; found:
finish's (command, finite, active, fault, saturated).

Through numba's dispatcher such a call types and unboxes its twenty-eight arguments, 1.6 us
of the teach tick's 5.6 here. Each call is also a numba cfunc over raw pointers (as
kernels.entry's), and the package's C module binds it once to the law's and the stage's arrays
(`_calls.Tick`): a tick then passes only its state, its targets and a few numbers, each array
checked once. The bound call is cached on the law for its stage; a new law or a new stage (a
configure) binds again. Without the C module, or for an input the bound call cannot take (not
a float64 array of the size), the dispatcher runs the same code, and says what is wrong.
"""

import functools

import numpy as np

from dyn_control.controller import cartesian, laws
from dyn_control.controller.limits import finish
from dyn_control.dynamics import as_vector
from dyn_control.kernels.compile import HAVE_NUMBA, jit


@jit
def _joint_tick(mvec, mrot, ints, vecs, rots, mats, rows, values, q, qd, q_d, qd_d, qdd_d,
                integral, dt, st_rows, st_values, bodies, R_offs, p_offs, lows, highs, Rf, pf, J,
                force, share, walls, previous, since):
    tau, e, ed = laws._law(mvec, mrot, ints, vecs, rots, mats, rows, values, q, qd, q_d, qd_d,
                           qdd_d, integral, dt)
    return e, ed, finish(mvec, mrot, ints, vecs, rots, mats, st_rows, st_values, bodies, R_offs,
                         p_offs, lows, highs, Rf, pf, J, force, share, walls, previous, since,
                         tau, q, qd)


@jit
def _cartesian_tick(mvec, mrot, ints, vecs, rots, mats, own, q, qd, R_d, p_d, w, q_n, st_rows,
                    st_values, bodies, R_offs, p_offs, lows, highs, Rf, pf, J, force, share, walls,
                    previous, since):
    # own: the law's arrays after the workspace's, one tuple (a call of over 30 arguments
    # compiles to a star call, which numba's cfuncs do not take)
    (frame_bodies, R_offs_f, p_offs_f, gains, joints, values, bases, squares, vectors, columns,
     wide, tall, rotations) = own
    tau, e = cartesian._law(mvec, mrot, ints, vecs, rots, mats, frame_bodies, R_offs_f, p_offs_f,
                            gains, joints, values, bases, squares, vectors, columns, wide, tall,
                            rotations, q, qd, R_d, p_d, w, q_n)
    return e, finish(mvec, mrot, ints, vecs, rots, mats, st_rows, st_values, bodies, R_offs,
                     p_offs, lows, highs, Rf, pf, J, force, share, walls, previous, since, tau, q,
                     qd)


@jit
def _teach_tick(mvec, mrot, ints, vecs, rots, mats, damping, friction, band, teach_damping,
                teach_limits, q, qd, st_rows, st_values, bodies, R_offs, p_offs, lows, highs, Rf,
                pf, J, force, share, walls, previous, since):
    tau = laws._teach(mvec, mrot, ints, vecs, rots, mats, damping, friction, band, teach_damping,
                      teach_limits, q, qd)
    return finish(mvec, mrot, ints, vecs, rots, mats, st_rows, st_values, bodies, R_offs, p_offs,
                  lows, highs, Rf, pf, J, force, share, walls, previous, since, tau, q, qd)


def joint_tick(law, q, qd, desired, dt, limits):
    """A joint law (laws.ControlLaw) at (q, qd) toward desired (q_d, qd_d, qdd_d), integral step
    dt, then the stage -> (e, ed, found). A registered mode's torque is compiled apart: two
    calls then.
    """
    stage, share, walls, previous, since = limits
    if law.registered:
        tau, e, ed = law(q, qd, *desired, dt)
        return e, ed, finish(*law.data.args, *stage.args, share, walls, previous, since, tau,
                             as_vector(law.chain, q, "q"), as_vector(law.chain, qd, "qd"))
    tick = _bound(law, stage, _joint_layout)
    if tick is not None:
        got = tick.call(q, qd, *desired, previous, dt, share, walls, since,
                        previous is not None)
        if got is not None:
            return got[0], got[1], got[2:]
    c = law.chain
    q, qd = as_vector(c, q, "q"), as_vector(c, qd, "qd")
    q_d, qd_d, qdd_d = (as_vector(c, x, name) for x, name in zip(desired, ("q_d", "qd_d",
                                                                           "qdd_d")))
    return _joint_tick(*law._args, q, qd, q_d, qd_d, qdd_d, law.integral, float(dt),
                       *stage.args, share, walls, previous, since)


def cartesian_tick(law, q, qd, R_d, p_d, w, q_n, limits):
    """The Cartesian law (cartesian.CartesianLaw, its call's arguments), then the stage -> (e,
    found).
    """
    stage, share, walls, previous, since = limits
    tick = _bound(law, stage, _cartesian_layout)
    if tick is not None:
        got = tick.call(q, qd, R_d, p_d, w, q_n, previous, share, walls, since,
                        previous is not None)
        if got is not None:
            return got[0], got[1:]
    return _cartesian_tick(*law._args[:6], law._args[6:], q, qd, *law.targets(R_d, p_d, w), q_n,
                           *stage.args, share, walls, previous, since)


def teach_tick(law, q, qd, limits):
    """The teach law (laws.TeachLaw) at (q, qd), then the stage -> found."""
    stage, share, walls, previous, since = limits
    tick = _bound(law, stage, _teach_layout)
    if tick is not None:
        got = tick.call(q, qd, previous, share, walls, since, previous is not None)
        if got is not None:
            return got
    c = law.chain
    return _teach_tick(*law._args, as_vector(c, q, "q"), as_vector(c, qd, "qd"), *stage.args,
                       share, walls, previous, since)


# ---------------------------------------------------------------------- the C entry

def _bound(law, stage, layout):
    """The law's tick bound to `stage` (cached on the law), or None: no C module."""
    cached = law.__dict__.get("_tick")
    if cached is None or cached[0] is not stage:
        cached = (stage, layout(law, stage) if _calls is not None else None)
        law._tick = cached
    return cached[1]


def _split(arrays):
    """A kernel's array arguments -> (float64 arrays, int64 arrays), in their order."""
    return (tuple(a for a in arrays if a.dtype == np.float64),
            tuple(a for a in arrays if a.dtype == np.int64))


def _tables(law, stage, own, sizes):
    """The fixed tables of a bound tick: the model's, the workspace's and the stage's arrays,
    then the law's `own`; ints: the sizes first.
    """
    floats, ints = _split((*law.data.args, *stage.args, *own))
    return floats, (np.array(sizes, dtype=np.int64), *ints)


def _tick(entry, law, stage, own, sizes, dynamic, inputs, results):
    """A _calls.Tick of `entry` over the law's and the stage's tables (_tables); dynamic: the
    element counts of the call's arrays, the last the previous command (None allowed); inputs:
    how many numbers follow them; results: the shapes of the arrays it returns, before finish's
    flags (finite, active, fault, saturated).
    """
    floats, ints = _tables(law, stage, own, sizes)
    arrays = tuple((count, -1, False) for count in dynamic[:-1]) + ((dynamic[-1], -1, True),)
    return _calls.Tick(_compiled(entry).address, floats, ints, arrays, inputs, results, "bbib",
                       np.empty)


def _teach_layout(law, stage):
    n = law.chain.n
    damping, friction, band, teach_damping, teach_limits = law._args[6:]
    own = (damping, friction, np.array([band]), teach_damping, teach_limits)
    return _tick(_teach_entry, law, stage, own, _sizes(n, stage), (n, n, n), 4, ((n,),))


def _joint_layout(law, stage):
    n = law.chain.n
    own = (*law._args[6:], law.integral)  # rows, values, integral
    return _tick(_joint_entry, law, stage, own, _sizes(n, stage), (n,) * 6, 5,
                 ((n,), (n,), (n,)))


def _cartesian_layout(law, stage):
    n, f = law.chain.n, len(law.ee_links)
    own = law._args[6:]  # frame_bodies, R_offs, p_offs, gains, joints, values, bases, work
    return _tick(_cartesian_entry, law, stage, own, (*_sizes(n, stage), f),
                 (n, n, 9 * f, 3 * f, 6 * f, n, n), 4, ((6 * f,), (n,)))


@functools.cache
def _compiled(entry):
    """Entry's cfunc, compiled (or loaded) at its first use: a process that never ticks does
    not pay for it. The cache keeps the cfunc, and so its code, alive.
    """
    return cfunc(SIGNATURE, cache=True)(entry)


def _sizes(n, stage):
    """n, the walls' frames, the rows of their boxes (the stage's arrays' shapes)."""
    bodies, lows = stage.args[2], stage.args[5]
    return n, bodies.shape[0], lows.shape[0]


_calls = None
if HAVE_NUMBA:
    try:
        from dyn_control import _calls
    except ImportError:  # not built (a source tree used as is): numba's dispatcher
        _calls = None

if _calls is not None:
    from numba import carray, cfunc, types

    from dyn_control.kernels.entry import _arrays

    FLOATS = types.CPointer(types.CPointer(types.float64))
    INTS = types.CPointer(types.CPointer(types.int64))
    NUMBERS = types.CPointer(types.float64)
    SIGNATURE = types.int32(FLOATS, INTS, NUMBERS)

    @jit
    def _model(f, i, n):
        """The model's and the workspace's arrays: floats 0-4, ints 1."""
        return _arrays(f[0], f[1], i[1], f[2], f[3], f[4], n)

    @jit
    def _stage(f, i, n, walls, rows):
        """The stage's arrays: floats 5-14, ints 2 (limits.Stage.args)."""
        return (carray(f[5], (9, n)), carray(f[6], 9), carray(i[2], walls),
                carray(f[7], (walls, 3, 3)), carray(f[8], (walls, 3)), carray(f[9], (rows, 3)),
                carray(f[10], (rows, 3)), carray(f[11], (3, 3)), carray(f[12], 3),
                carray(f[13], (6, n)), carray(f[14], 3))

    @jit
    def _flags(x, at, finite, active, fault, saturated):
        x[at], x[at + 1], x[at + 2], x[at + 3] = finite, active, fault, saturated

    # Each entry: the tables' layout is the order of the law's and the stage's arguments
    # (_tables), then the call's arrays, then the results; the numbers: the call's, whether a
    # last command came (else it is taken as (0,): none), then finish's flags (FLAGS). One
    # call site each, its arguments by name: each compiled variant links the whole law again
    # (5 to 10 s on a first run), and numba takes no star-unpacking after a branch.

    def _teach_entry(f, i, x):
        sizes = carray(i[0], 3)
        n = sizes[0]
        mvec, mrot, ints, vecs, rots, mats = _model(f, i, n)
        st_rows, st_values, bodies, R_offs, p_offs, lows, highs, Rf, pf, J, force = _stage(
            f, i, n, sizes[1], sizes[2])
        q, qd, out = carray(f[20], n), carray(f[21], n), carray(f[23], n)
        previous = carray(f[22], n if x[3] != 0.0 else 0)
        try:
            found = _teach_tick(mvec, mrot, ints, vecs, rots, mats, carray(f[15], n),
                                carray(f[16], n), carray(f[17], 1)[0], carray(f[18], n),
                                carray(f[19], n), q, qd, st_rows, st_values, bodies, R_offs,
                                p_offs, lows, highs, Rf, pf, J, force, x[0], x[1] != 0.0,
                                previous, x[2])
        except Exception:  # noqa: BLE001 - a cfunc cannot raise: the dispatcher says it
            return 0
        out[:] = found[0]
        _flags(x, 4, found[1], found[2], found[3], found[4])
        return 1

    def _joint_entry(f, i, x):
        sizes = carray(i[0], 3)
        n = sizes[0]
        mvec, mrot, ints, vecs, rots, mats = _model(f, i, n)
        st_rows, st_values, bodies, R_offs, p_offs, lows, highs, Rf, pf, J, force = _stage(
            f, i, n, sizes[1], sizes[2])
        e, ed, out = carray(f[24], n), carray(f[25], n), carray(f[26], n)
        previous = carray(f[23], n if x[4] != 0.0 else 0)
        try:
            found = _joint_tick(mvec, mrot, ints, vecs, rots, mats, carray(f[15], (8, n)),
                                carray(f[16], 3), carray(f[18], n), carray(f[19], n),
                                carray(f[20], n), carray(f[21], n), carray(f[22], n),
                                carray(f[17], n), x[0], st_rows, st_values, bodies, R_offs,
                                p_offs, lows, highs, Rf, pf, J, force, x[1], x[2] != 0.0,
                                previous, x[3])
        except Exception:  # noqa: BLE001 - as above
            return 0
        e[:], ed[:] = found[0], found[1]
        done = found[2]
        out[:] = done[0]
        _flags(x, 5, done[1], done[2], done[3], done[4])
        return 1

    def _cartesian_entry(f, i, x):
        sizes = carray(i[0], 4)
        n, frames = sizes[0], sizes[3]
        m = 6 * frames
        mvec, mrot, ints, vecs, rots, mats = _model(f, i, n)
        st_rows, st_values, bodies, R_offs, p_offs, lows, highs, Rf, pf, J, force = _stage(
            f, i, n, sizes[1], sizes[2])
        e, out = carray(f[34], m), carray(f[35], n)
        previous = carray(f[33], n if x[3] != 0.0 else 0)
        own = (carray(i[3], frames), carray(f[15], (frames, 3, 3)), carray(f[16], (frames, 3)),
               carray(f[17], (2, m)), carray(f[18], (6, n)), carray(f[19], 6),
               carray(f[20], (2, m, m)), carray(f[21], (cartesian.SQUARES, m, m)),
               carray(f[22], (cartesian.VECTORS, m)), carray(f[23], (cartesian.COLUMNS, n)),
               carray(f[24], (cartesian.WIDE, m, n)), carray(f[25], (n, m)),
               carray(f[26], (cartesian.ROTATIONS, 3, 3)))
        try:
            found = _cartesian_tick(
                mvec, mrot, ints, vecs, rots, mats, own, carray(f[27], n), carray(f[28], n),
                carray(f[29], (frames, 3, 3)), carray(f[30], (frames, 3)), carray(f[31], m),
                carray(f[32], n), st_rows, st_values, bodies, R_offs, p_offs, lows, highs, Rf,
                pf, J, force, x[0], x[1] != 0.0, previous, x[2])
        except Exception:  # noqa: BLE001 - as above
            return 0
        e[:] = found[0]
        done = found[1]
        out[:] = done[0]
        _flags(x, 4, done[1], done[2], done[3], done[4])
        return 1
