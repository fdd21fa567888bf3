"""The external joint torques an arm feels, from its model: De Luca's generalized-momentum
observer, and the wrench at a frame that explains them. Pure numpy over the compiled kernels.

The arm obeys M qdd + C qd + g = tau + tau_p + tau_ext (tau the applied torque, tau_p the
joints' damping and friction, tau_ext what the world does). With p = M qd and M-dot = C + C^T:
    p-dot = tau + tau_p + tau_ext - beta,    beta = g - C^T qd
(kernels/momentum.py computes p, C^T qd and g in one pass). The residual
    r = K_O (p - p(0) - integral of (tau + tau_p - beta + r))
then obeys r-dot = K_O (tau_ext - r): a first-order filter of tau_ext, with no qdd and no M^-1.

Sampled: between two states t0 and t1 the known part of p's change is dt tau, tau being the
command held over the interval (what the controller sent after the state at t0), plus dt times
the mean at both ends of tau_p - beta (the trapezoid: its error is dt^2/12 of their second
derivative in time, zero at rest). The damping's integral is B (q1 - q0) exactly, but that
multiplies position noise by B/dt (10^6 on Tiago's torso at 1 kHz) where B qd multiplies
velocity noise by B. What is left, y = p1 - p0 - that, is the integral of
tau_ext. The filter's exact discrete form for an input held over dt,
    r1 = e^(-K dt) r0 + (1 - e^(-K dt)) y / dt,
gives r = tau_ext (1 - e^(-K t)) exactly at every sample for a constant tau_ext: the gain
(1 - e^(-K dt)) / dt, where Euler's K would overshoot for K dt near 1 and beyond.

The damping and friction the URDF gives (those the controller compensates) are in tau_p, so they
do not read as contact: -B qd - F clip(qd / FRICTION_VELOCITY, -1, 1). A joint that sticks
inside its friction band holds an unknown share of its friction, up to F: r there reads it.
What the observer reports as the world's (`felt`: the levels, the wrench, the topics) is r
less that band (kernels.momentum.beyond_friction), so a joint that sticks at the start of a
motion does not read as contact (Talos's arm, 1 N m on every joint, read 10 N at its hand
26 ms into the demo). A push smaller than the band at a sticking joint is not seen either:
it cannot be told from friction.
"""

import math

import numpy as np

from dyn_control.dynamics import as_vector
from dyn_control.kernels import momentum
from dyn_control.model.layout import Data

# rad/s or m/s: Coulomb friction reaches its full value from here on (a sign of qd below would
# flip on sensor noise)
FRICTION_VELOCITY = 1e-3
# A state more than this many typical steps after the last one starts the integral again: the
# torque applied over a gap is unknown (the state's measured effort is the last step's only),
# and a lost stretch of states under load read as a 48 N push
GAP_STEPS = 4.0
# The wrench at a frame is not estimated along a direction whose singular value of the frame's
# Jacobian is below this (m, or rad: 2 mm of motion per rad of joint): the joints barely feel
# a force there, and 1/sigma turns the observer's own error in motion into newtons (at 1 mm
# per rad, Tiago++'s stretched arm read 0.14 N m at its shoulder as 12 N at its tool, sigma
# 1.01e-3). Higher costs the estimate where a real push is felt: at 1 cm per rad the UR5's
# push near its stretched zero pose was read 11 % off (3 % at this value)
SINGULAR_VALUE = 2e-3


def momentum_terms(chain, q, qd):
    """(p, C^T qd, g), each (n,): the generalized momentum M(q) qd, C(q, qd)^T qd (which does
    not depend on how C is factored: it is dT/dq, T the kinetic energy) and g(q).
    """
    out = np.empty((3, chain.n))
    momentum.momentum_terms(*chain.workspace().args, as_vector(chain, q, "q"),
                            as_vector(chain, qd, "qd"), out[0], out[1], out[2])
    return out[0], out[1], out[2]


def check_gain(gain):
    """The observer gain K_O (1/s) as a float; ValueError names it and the value."""
    if isinstance(gain, bool) or not isinstance(gain, (int, float)) or not (
            math.isfinite(gain) and gain > 0):
        raise ValueError(f"external_torque.observer_gain must be a finite number > 0 (1/s), "
                         f"got {gain!r}")
    return float(gain)


class MomentumObserver:
    """The residual r (n,) N m or N of one model (module docstring), updated per joint state.

    gain: K_O (1/s). damping (N m s/rad) and friction (N m) per joint: the passive torques to
    take as known (default: the chain's, from the URDF; zeros to take them as external).
    `update(t, q, qd, tau)` takes a state at time t (s, the state's stamp) and the torque
    applied since the previous state; the first state, one that does not come after the
    previous one, and one more than GAP_STEPS typical steps after it (states were lost) start
    the integral there (r is kept: it decays from what it was).
    """

    def __init__(self, chain, gain, damping=None, friction=None, r=None):
        self.chain, self.gain = chain, check_gain(gain)
        self.damping = chain.damping.copy() if damping is None else np.array(damping, float)
        self.friction = chain.friction.copy() if friction is None else np.array(friction, float)
        self.data = Data(chain.pack)  # the observer's workspace
        self.memory = np.zeros((3, chain.n))  # p, the known part of p-dot and qd, last state
        self.r = np.zeros(chain.n) if r is None else np.array(r, dtype=float)
        self.felt = self.r.copy()  # r beyond what friction may hold (module docstring)
        self.band = np.zeros((2, chain.n))  # that friction's bound, filtered, and at the last state
        self.time = None
        self.period = None  # the typical step between states (s): a moving average
        self.gap_steps = GAP_STEPS

    def restart(self):
        """Start the integral again at the next state (a gap, a new model); r is kept."""
        self.time = None

    def step(self, t):
        """Take the time t (s) of a new state -> (dt, e^(-K dt), started): the kernels' step
        (no step when it does not come after the last state's).
        """
        started = self.time is not None
        dt = t - self.time if started else 0.0
        self.time = t
        if dt > 0:
            gap = self.period is not None and dt > self.gap_steps * self.period
            # the average follows a rate that really changed, gaps included
            self.period = dt if self.period is None else 0.9 * self.period + 0.1 * dt
            if gap:
                return 0.0, 1.0, False
        return dt, math.exp(-self.gain * dt) if dt > 0 else 1.0, started

    def update(self, t, q, qd, tau):
        """felt after the state (t, q, qd), tau (n,) the torque applied since the last state."""
        dt, decay, started = self.step(t)
        momentum.observer_update(*self.data.args, q, qd, tau, self.damping, self.friction,
                                 FRICTION_VELOCITY, dt, decay, started, self.memory, self.r)
        momentum.beyond_friction(qd, self.friction, FRICTION_VELOCITY, decay, self.band, self.r,
                                 self.felt)
        return self.felt

    def wrench(self, q, frame, out):
        """Fill out (6,) with the wrench of `felt` at `frame` (Chain.frame's (body, R_off,
        p_off)), as wrench_at, in the observer's own workspace; whether J was singular.
        """
        return bool(momentum.frame_wrench(*self.data.args, q, *frame, self.felt, SINGULAR_VALUE,
                                          out))


def wrench_at(chain, q, torques, link=None, singular_value=SINGULAR_VALUE):
    """The wrench F (6,) [force N; moment N m], base axes, at `link` (default: the tip link)
    that best explains the joint torques (n,) as J^T F, J the link's Jacobian at q
    (kinematics' local_world_aligned), and whether J was singular there.

    (J^T)^+ with the singular values of J below `singular_value` dropped: near a singularity F
    stays finite, has no part along the directions the joints cannot feel, and is flagged.
    With fewer than 6 joints only the part of F that the joints can feel is estimated.
    """
    F = np.empty(6)
    singular = momentum.frame_wrench(
        *chain.workspace().args, as_vector(chain, q, "q"),
        *chain.frame(chain.tip_link if link is None else link),
        as_vector(chain, torques, "torques"), singular_value, F)
    return F, bool(singular)
