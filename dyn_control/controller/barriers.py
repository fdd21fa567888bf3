"""What keeps a real arm away from its firmware's reflexes (a joint at its stop, a velocity over
its limit, a hand through a wall): barrier torques on top of the law, compiled. Pure numpy.

One profile serves the joint limits and the walls. At a distance d from a limit, inside a
margin m, with s = (m - d) / m the share of the margin crossed:

    a = max(k m (m - d) / d - c s v, 0)        (v: the speed away from the limit)

with d the distance HEADWAY s ahead at the speed toward the limit, zero outside the margin and
at its edge (no step when a joint enters it), k (the stiffness, 1/s^2 for a joint) near the
edge, growing without bound toward the limit. Its damping c fades in with s and acts both ways,
so a joint that came in fast does not bounce back out over its velocity limit; and the whole is
never negative: the barrier never pushes toward a limit. At d = m / 2, at rest, it asks k m.
Its slope k m^2 / d^2 is a spring the sampled loop holds while slope * n * T^2 < 1 (n joints
coupled, the gains' bound in control.check_gains): closer than d_min = m sqrt(k n) T (0.015 rad
with the defaults on six joints) it goes on linearly, along its tangent, past the limit too.
There it asks over 2500 rad/s^2, beyond any arm's effort limits.

Why HEADWAY: the command is rate-limited (max_effort_rate), so a brake builds up over time. A
torque ramping at R stops a joint of inertia I from speed v in (2/3) v sqrt(2 I v / R): 0.196
rad for the UR5's elbow (2.5 kg m^2) at 2.6 rad/s, the whole default margin. A barrier on the
distance as it is asks its brake too late, and the ramping command then lags it on the way back
out too. Acting on where the joint will be, it starts braking 0.39 rad earlier at that speed.

A joint's barrier is an acceleration times the joint's inertia with the others free, I_i(q)
(control.py's gains are scaled so too): one stiffness serves the light wrist and the heavy
shoulder of every arm. At d = m / 2 it asks k m: with the defaults, 200 rad/s^2 on a 0.2 rad
margin, what computed_torque's kp asks of a 0.5 rad error. The effort limits bound its sum with
the law (controller.guard).

Velocity: over `fraction` of a joint's velocity limit, damping c_v x / (1 - x) with x the share
of the band from fraction * limit to the limit crossed, at most 1 / (n T) (the most a sampled
loop of period T damps stably with n joints coupled, control.check_gains); at the limit itself
the controller stops the arm (a fault, controller.guard).
"""

import math

import numpy as np

from dyn_control.kernels import mass_matrix as mass
from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.frames import (
    LOCAL_WORLD_ALIGNED,
    frame_jacobian,
    frame_placement,
    kinematics,
)
from dyn_control.parameters import (
    DEFAULT_MARGIN_MAX,
    DEFAULT_MARGIN_SHARE,
)

RECOVERY_TIME = 1.0  # s: a joint that starts inside its margin gets the whole margin back in this
HEADWAY = 0.15  # s: the barriers act on where a joint (a hand) will be this long ahead


def default_margins(chain):
    """(n,) rad or m: DEFAULT_MARGIN_SHARE of each joint's range, at most DEFAULT_MARGIN_MAX;
    0 (no barrier) on a joint without two limits.
    """
    span = chain.position_max - chain.position_min
    return np.where(np.isfinite(span), np.minimum(DEFAULT_MARGIN_SHARE * span, DEFAULT_MARGIN_MAX),
                    0.0)


@jit
def push(d, away, margin, stiffness, damping, nearest):
    """The module docstring's profile: the barrier's push away from a limit at distance d,
    moving away from it at `away`; closer than `nearest` (> 0), and past the limit, it goes on
    along its tangent at `nearest`.
    """
    d += HEADWAY * min(away, 0.0)  # where the joint will be, at its speed toward the limit
    if margin <= 0.0 or d >= margin:
        return 0.0
    share = min((margin - d) / margin, 1.0)
    near = max(d, nearest)
    spring = stiffness * margin * ((margin - near) / near + margin / near ** 2 * (near - d))
    return max(spring - damping * share * away, 0.0)


@jit
def joint_barriers(mvec, mrot, ints, vecs, rots, mats, q, qd, lower, upper, margin, stiffness,
                   damping, velocity_limit, fraction, velocity_damping, period, out):
    """Fill out (n,) with the barrier torques (N m or N) at (q, qd) -> (active, fault): whether
    any is non-zero, and the first joint over its velocity limit (-1: none). Per joint (n,):
    lower, upper (inf: none), margin (0: off), stiffness, damping, velocity_limit (inf: none);
    fraction (0: no velocity damping), velocity_damping (1/s) and period (s) are scalars.
    """
    n = q.shape[0]
    most_damping = 1.0 / (n * period)
    active, fault = False, -1
    for i in range(n):
        nearest = margin[i] * math.sqrt(stiffness[i] * n) * period
        a = (push(q[i] - lower[i], qd[i], margin[i], stiffness[i], damping[i], nearest)
             - push(upper[i] - q[i], -qd[i], margin[i], stiffness[i], damping[i], nearest))
        speed, limit = abs(qd[i]), velocity_limit[i]
        if fraction > 0.0 and speed > fraction * limit:
            band = (1.0 - fraction) * limit
            x = (speed - fraction * limit) / band if band > 0.0 else 1.0
            c = velocity_damping * x / (1.0 - x) if x < 1.0 else most_damping
            a -= min(c, most_damping) * qd[i]
        if speed > limit and fault < 0:
            fault = i
        out[i] = a
        active = active or a != 0.0
    if active:
        inertia = np.empty(n)
        mass.joint_inertias(mvec, mrot, ints, vecs, rots, mats, q, inertia)
        for i in range(n):
            out[i] *= inertia[i]
    return active, fault


@jit
def wall_force(p, v, low, high, margin, stiffness, damping, out):
    """Fill out (3,) with the walls' force (N, base axes) on a hand at p (3,) m moving at v
    (3,) m/s, inside the box low..high (3,) with the profile above -> whether it is non-zero.
    """
    active = False
    for k in range(3):
        f = (push(p[k] - low[k], v[k], margin, stiffness, damping, 1e-3 * margin)
             - push(high[k] - p[k], -v[k], margin, stiffness, damping, 1e-3 * margin))
        out[k] = f
        active = active or f != 0.0
    return active


@jit
def wall_barriers(mvec, mrot, ints, vecs, rots, mats, q, qd, bodies, R_offs, p_offs, lows,
                  highs, margin, stiffness, damping, Rf, pf, J, force, out):
    """Add to out (n,) each frame's walls' J_v^T F (wall_force at the frame's origin, lows and
    highs (frames, 3)), from one kinematics pass; Rf, pf, J, force: scratch -> whether any
    acts.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    n, v, active = q.shape[0], np.empty(3), False
    for k in range(bodies.shape[0]):
        frame_placement(d, bodies[k], R_offs[k], p_offs[k], Rf, pf)
        frame_jacobian(m, d, bodies[k], Rf, pf, LOCAL_WORLD_ALIGNED, J)
        for a in range(3):
            v[a] = 0.0
            for j in range(n):
                v[a] += J[a, j] * qd[j]
        if wall_force(pf, v, lows[k], highs[k], margin, stiffness, damping, force):
            active = True
            for j in range(n):
                out[j] += J[0, j] * force[0] + J[1, j] * force[1] + J[2, j] * force[2]
    return active


def room(q, lower, upper):
    """(n,) rad or m: each joint's distance to its nearest limit (inf: none)."""
    return np.minimum(q - lower, upper - q)


def check_margins(chain, margins):
    """ValueError naming the joint and the value when a margin is over half its joint's range
    (the two barriers would overlap: no place would be free of them).
    """
    span = chain.position_max - chain.position_min
    for name, m, s in zip(chain.joint_names, margins, span):
        if math.isfinite(s) and m > s / 2:
            raise ValueError(f"limits.position_margin on {name}: {m:g} is over half its range "
                             f"({s:g})")
