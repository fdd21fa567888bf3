"""Joint trajectories as joint_trajectory_controller samples them; pure numpy.

A `Trajectory` is a list of waypoints (time from start s, positions, and optionally velocities
and accelerations) plus a start time and the desired state at that time. Between waypoints it
is a polynomial per joint:
quintic when every waypoint has accelerations, cubic when every waypoint has velocities,
otherwise linear. The segment from the start state to the first waypoint is interpolated the same
way, so a new trajectory continues smoothly from wherever the previous one was. After the last
waypoint the trajectory holds its position at zero velocity; before a start time in the future
it holds the start position. A single waypoint with time_from_start = 0 is a streaming
set-point: it applies at once.
"""

import numpy as np

from dyn_control.controller.barriers import default_margins
from dyn_control.model.chain import as_limit, position_bounds
from dyn_control.parameters import DEFAULT_VELOCITY_FRACTION


def _segment(p0, v0, acc0, p1, v1, acc1, T, kind):
    """Coefficients c (6, n) of p(s) = sum c_k s^k on [0, T] meeting the boundary values."""
    n = p0.shape[0]
    c = np.zeros((6, n))
    if kind == "linear":
        c[0], c[1] = p0, (p1 - p0) / T
    elif kind == "cubic":
        c[0], c[1] = p0, v0
        c[2] = (3 * (p1 - p0) - (2 * v0 + v1) * T) / T**2
        c[3] = (-2 * (p1 - p0) + (v0 + v1) * T) / T**3
    else:  # quintic
        c[0], c[1], c[2] = p0, v0, acc0 / 2
        h = p1 - p0 - v0 * T - acc0 * T**2 / 2
        dv = v1 - v0 - acc0 * T
        da = acc1 - acc0
        c[3] = (10 * h - 4 * dv * T + da * T**2 / 2) / T**3
        c[4] = (-15 * h + 7 * dv * T - da * T**2) / T**4
        c[5] = (6 * h - 3 * dv * T + da * T**2 / 2) / T**5
    return c


_D1, _D2 = np.arange(1.0, 6.0), np.array([2.0, 6.0, 12.0, 20.0])  # d/ds and d2/ds2 of s^k


def _powers(s):
    """s^k (k = 0..5) and their first and second derivatives, for s a scalar or (N,) array."""
    powers = np.asarray(s, dtype=float)[..., None] ** np.arange(6)
    return powers, _D1 * powers[..., :5], _D2 * powers[..., :4]


def _evaluate(c, s):
    p, p1, p2 = _powers(s)
    return p @ c, p1 @ c[1:], p2 @ c[2:]


class Trajectory:
    """Waypoints after `start_time` (s), continuing from the desired state at start.

    times: (k,) s from start, strictly increasing, times[0] >= 0.
    positions: (k, n); velocities, accelerations: (k, n) or None.
    start: (q, qd, qdd) desired state at start_time, each (n,).
    """

    def __init__(self, start_time, start, times, positions, velocities=None, accelerations=None):
        times = np.asarray(times, dtype=float)
        positions = np.asarray(positions, dtype=float)
        if velocities is not None and accelerations is not None:
            self.kind = "quintic"
        elif velocities is not None:
            self.kind = "cubic"
        else:
            self.kind = "linear"
        k, n = positions.shape
        vel = np.zeros((k, n)) if velocities is None else np.asarray(velocities, dtype=float)
        acc = np.zeros((k, n)) if accelerations is None else np.asarray(accelerations, dtype=float)
        self.start_time = float(start_time)
        self.end_time = self.start_time + times[-1]
        p0, v0, acc0 = (np.asarray(x, dtype=float) for x in start)
        if times[0] <= 0.0:  # the first waypoint applies at once (streaming set-point)
            self.knots = times.copy()
            segments_from = [(positions[i], vel[i], acc[i]) for i in range(k - 1)]
            segments_to = [(positions[i + 1], vel[i + 1], acc[i + 1]) for i in range(k - 1)]
        else:
            self.knots = np.concatenate([[0.0], times])
            segments_from = [(p0, v0, acc0)] + [(positions[i], vel[i],
                                                 acc[i]) for i in range(k - 1)]
            segments_to = [(positions[i], vel[i], acc[i]) for i in range(k)]
        self.coeffs = np.array([
            _segment(*a, *b, T, self.kind)
            for a, b, T in zip(segments_from, segments_to, np.diff(self.knots))
        ]).reshape(-1, 6, n)
        # held before start_time (a start in the future) and after the end
        self.waiting, self.final, self.zero = p0.copy(), positions[-1].copy(), np.zeros(n)

    @classmethod
    def hold(cls, t, q):
        """Hold position q from time t on."""
        q = np.asarray(q, dtype=float)
        zero = np.zeros_like(q)
        return cls(t, (q, zero, zero), [0.0], q[None, :])

    def sample(self, t):
        """Desired (q, qd, qdd), each (n,), at time t (s).

        While it holds, these are the trajectory's own arrays (no copy in the control tick):
        a caller that changes them copies first.
        """
        s = t - self.start_time
        if s < 0.0:
            return self.waiting, self.zero, self.zero
        if s >= self.knots[-1]:
            return self.final, self.zero, self.zero
        i = int(np.searchsorted(self.knots, s, side="right")) - 1
        return _evaluate(self.coeffs[i], s - self.knots[i])

    def sample_many(self, t):
        """Desired (q, qd, qdd), each (N, n), at the times t (N,) s, without a Python loop."""
        s = np.asarray(t, dtype=float) - self.start_time
        i = np.clip(np.searchsorted(self.knots, s, side="right") - 1, 0, max(len(self.coeffs) - 1,
                                                                             0))
        out = [np.empty((s.size, self.final.size)) for _ in range(3)]
        moving = (s >= 0.0) & (s < self.knots[-1])
        if len(self.coeffs):
            c = self.coeffs[i[moving]]
            p, p1, p2 = _powers(s[moving] - self.knots[i[moving]])
            out[0][moving] = np.einsum("sk,skj->sj", p, c)
            out[1][moving] = np.einsum("sk,skj->sj", p1, c[:, 1:])
            out[2][moving] = np.einsum("sk,skj->sj", p2, c[:, 2:])
        out[0][s < 0.0], out[0][s >= self.knots[-1]] = self.waiting, self.final
        for x in out[1:]:
            x[~moving] = 0.0
        return tuple(out)

    def check_times(self, step=0.01):
        """Times (s) at which to check the trajectory: every `step` from start to end, every
        waypoint, and the end.
        """
        grid = self.start_time + np.arange(0.0, self.knots[-1], step)
        return np.unique(np.concatenate([grid, self.start_time + self.knots, [self.end_time]]))


def _smoothstep(t, ramp):
    """Quintic 0 -> 1 over [0, ramp] and its first two time derivatives."""
    s = np.clip(t / ramp, 0.0, 1.0)
    inside = (t > 0) & (t < ramp)
    w = 10 * s**3 - 15 * s**4 + 6 * s**5
    dw = np.where(inside, (30 * s**2 - 60 * s**3 + 30 * s**4) / ramp, 0.0)
    ddw = np.where(inside, (60 * s - 180 * s**2 + 120 * s**3) / ramp**2, 0.0)
    return w, dw, ddw


def sine_waypoints(q0, lower, upper, duration=10.0, amplitude=0.3, frequency=0.2, rate=50.0,
                   ramp=1.0, velocity=None):
    """A smooth demo motion about q0: per joint a sum of two sines, faded in and out.

    q_j(t) = q0_j + A_j w(t) (sin(w1_j t) + 0.5 sin(1.7 w1_j t)), w1_j = 2 pi f (1 + 0.1 j), with
    w a quintic smoothstep up over the first `ramp` s and down over the last, so the motion starts
    and ends at rest. A_j <= amplitude keeps every joint inside 90 % of the room between q0 and
    its limits, and within 90 % of its `velocity` limit (n,) rad/s or m/s when given (0 or
    less: none), so that the controller's trajectory check passes it. Returns (times, q, qd, qdd)
    sampled at `rate` Hz, times (k,) in (0, duration], arrays (k, n): the waypoints of a quintic
    trajectory.
    """
    q0 = np.asarray(q0, dtype=float)
    n = q0.size
    low, high = position_bounds(np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
    room = np.minimum(q0 - low, high - q0)
    amp = np.minimum(amplitude, 0.9 * np.maximum(room, 0.0) / 1.5)  # |sum of sines| <= 1.5
    w1 = 2 * np.pi * frequency * (1 + 0.1 * np.arange(n))
    w2 = 1.7 * w1
    t = np.arange(1, int(round(duration * rate)) + 1)[:, None] / rate
    up, dup, ddup = _smoothstep(t, ramp)
    down, ddown, dddown = _smoothstep(duration - t, ramp)
    w, dw, ddw = up * down, dup * down - up * ddown, ddup * down - 2 * dup * ddown + up * dddown
    f = np.sin(w1 * t) + 0.5 * np.sin(w2 * t)
    df = w1 * np.cos(w1 * t) + 0.5 * w2 * np.cos(w2 * t)
    ddf = -(w1**2) * np.sin(w1 * t) - 0.5 * w2**2 * np.sin(w2 * t)
    if velocity is not None:  # the velocity is linear in A: scale each joint to fit its limit
        limit = as_limit(velocity)
        peak = np.abs(amp * (dw * f + w * df)).max(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            amp = amp * np.minimum(1.0, np.where(peak > 0, 0.9 * limit / peak, 1.0))
    return (t[:, 0], q0 + amp * w * f, amp * (dw * f + w * df),
            amp * (ddw * f + 2 * dw * df + w * ddf))


def demo_waypoints(chain, q0, duration=10.0, amplitude=0.3, frequency=0.2, rate=50.0):
    """trajectory_demo's motion on a chain from q0: sine_waypoints inside its position and
    velocity limits, and where the controller's guard does nothing by default: outside the
    margins of its barriers and under the fraction of each velocity limit where its velocity
    damping begins (barriers.py; a demo that went there would show the guard, not the
    tracking). A joint whose Coulomb friction is not below its effort limit cannot be driven
    at all (Talos's gripper: 1 N m of each), so it stays at q0.
    """
    amplitude = np.where(chain.friction >= as_limit(chain.effort_limits), 0.0, amplitude)
    margin = default_margins(chain)
    return sine_waypoints(q0, chain.lower + margin, chain.upper - margin, duration, amplitude,
                          frequency, rate,
                          velocity=DEFAULT_VELOCITY_FRACTION * as_limit(chain.velocity_limits))
