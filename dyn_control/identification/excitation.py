"""Excitation trajectories for identification: a finite Fourier series per joint
(Swevers et al. 1997), whole periods, from rest to rest, inside the joint limits.

    q_j(t) = q0_j + sum_l  a_jl / (w l) sin(w l t) - b_jl / (w l) cos(w l t),   w = 2 pi / T

qd and qdd follow in closed form. Rest at t = 0 (and so at every whole period): qd(0) =
sum_l a_jl = 0 and qdd(0) = w sum_l l b_jl = 0, which fix a_jL and b_jL from the others; q0
puts q(0) at the start pose. The coefficients are scaled down until position, velocity and
acceleration stay inside `margin` of the limits; `optimize` picks them to make the base
regressor well conditioned (columns scaled to unit norm, so units do not weigh in).
"""

from dataclasses import dataclass

import numpy as np

from dyn_control.controller import barriers
from dyn_control.parameters import DEFAULT_VELOCITY_FRACTION


@dataclass(frozen=True)
class FourierSeries:
    period: float  # s, T: one whole period of the fundamental
    a: np.ndarray  # (n, L) rad/s (m/s for a prismatic joint)
    b: np.ndarray  # (n, L)
    start: np.ndarray  # (n,) q(0), at rest

    def __call__(self, t):
        """(q, qd, qdd), each (len(t), n), at the times t (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        w = 2 * np.pi / self.period
        L = self.a.shape[1]
        wl = w * np.arange(1, L + 1)  # (L,)
        s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))  # (m, L)
        q = s @ (self.a / wl).T - c @ (self.b / wl).T + self.start + (self.b / wl).sum(axis=1)
        qd = c @ self.a.T + s @ self.b.T
        qdd = -s @ (self.a * wl).T + c @ (self.b * wl).T
        return q, qd, qdd


def series(period, free_a, free_b, start):
    """The FourierSeries at rest at t = 0 whose first L - 1 harmonics per joint are free_a,
    free_b (n, L - 1); the last harmonic's are those that make qd(0) = qdd(0) = 0.
    """
    free_a, free_b = np.atleast_2d(free_a), np.atleast_2d(free_b)
    L = free_a.shape[1] + 1
    a = np.column_stack([free_a, -free_a.sum(axis=1)])
    b = np.column_stack([free_b, -(free_b * np.arange(1, L)).sum(axis=1) / L])
    return FourierSeries(float(period), a, b, np.asarray(start, dtype=float))


def scale_into_limits(trajectory, chain, margin=0.9, samples=2000):
    """The trajectory with its motion about `start` scaled down so that, sampled over a period,
    q stays within margin of the range about the start, and |qd|, |qdd| within margin of the
    velocity limits and of 10 x those per s (chain.velocity_limits). The range and the velocity
    limits are the controller's free zone, where its guard does nothing (barriers.py): its
    default margins in from each end, reached neither by q nor by where q heads (q + HEADWAY
    qd, what the barriers look at), and its default velocity fraction of each limit. An
    excitation the guard bent would not be the motion optimized for, and a held-out run it
    bent would compare the guard, the same for every model, not the models.
    """
    t = np.linspace(0.0, trajectory.period, samples)
    q, qd, qdd = trajectory(t)
    keep = barriers.default_margins(chain)
    lower, upper = np.where(np.isfinite(chain.lower), chain.lower + keep, -np.pi), \
        np.where(np.isfinite(chain.upper), chain.upper - keep, np.pi)
    centre, half = (upper + lower) / 2, margin * (upper - lower) / 2
    room_up = np.maximum(centre + half - trajectory.start, 1e-9)
    room_down = np.maximum(trajectory.start - (centre - half), 1e-9)
    ratios = []
    for motion in (q - trajectory.start, q + barriers.HEADWAY * qd - trajectory.start):
        ratios += [np.max(motion / room_up, axis=0), np.max(-motion / room_down, axis=0)]
    velocity = np.where(np.isfinite(chain.velocity_limits) & (chain.velocity_limits > 0),
                        chain.velocity_limits, 2.0)
    ratios += [np.abs(qd).max(axis=0) / (margin * DEFAULT_VELOCITY_FRACTION * velocity),
               np.abs(qdd).max(axis=0) / (margin * 10 * velocity)]
    k = np.max(ratios, axis=0)  # per joint: > 1 means over a limit
    k = np.where(k > 1.0, 1.0 / k, 1.0)[:, None]
    return FourierSeries(trajectory.period, trajectory.a * k, trajectory.b * k, trajectory.start)


def within_efforts(trajectory, chain, margin=0.9, samples=200):
    """The trajectory scaled down (by 0.9 at a time) until the model's torques over a period
    stay within margin of the effort limits; ValueError naming the joint when even holding
    the start pose needs more.
    """
    from dyn_control.dynamics import inverse_dynamics  # (the model's, with its gravity)
    limits = np.where(np.isfinite(chain.effort_limits) & (chain.effort_limits > 0),
                      chain.effort_limits, np.inf)
    t = np.linspace(0.0, trajectory.period, samples)
    for _ in range(60):
        worst = max(np.max(np.abs(inverse_dynamics(chain, q, qd, qdd)) / limits)
                    for q, qd, qdd in zip(*trajectory(t)))
        if worst <= margin:
            return trajectory
        trajectory = FourierSeries(trajectory.period, 0.9 * trajectory.a, 0.9 * trajectory.b,
                                   trajectory.start)
    hold = np.abs(inverse_dynamics(chain, trajectory.start, 0 * limits, 0 * limits)) / limits
    j = int(np.argmax(hold))
    raise ValueError(f"excitation: holding the start pose needs {hold[j]:.2f} of "
                     f"{chain.joint_names[j]}'s effort limit")


def condition(trajectory, chain, base, samples=100):
    """The condition number of the base regressor stacked over a period, its columns scaled
    to unit norm.
    """
    from dyn_control.identification.fit import regressor
    t = np.linspace(0.0, trajectory.period, samples, endpoint=False)
    W = base.columns(np.vstack([regressor(chain, q, qd, qdd)
                                for q, qd, qdd in zip(*trajectory(t))]))
    norms = np.linalg.norm(W, axis=0)
    return float(np.linalg.cond(W / np.where(norms > 0, norms, 1.0)))


def optimize(chain, base, start, period=10.0, harmonics=5, candidates=24, rounds=40, seed=0):
    """(trajectory, condition): a rest-to-rest Fourier series inside the limits (position,
    velocity, acceleration, effort) whose base regressor is best conditioned among random
    candidates, then improved by random steps that shrink when they stop helping.
    """
    rng = np.random.default_rng(seed)
    n = chain.n

    def make(free):
        traj = series(period, free[0], free[1], start)
        return within_efforts(scale_into_limits(traj, chain), chain)

    best, best_cond = None, np.inf
    for _ in range(candidates):
        free = rng.normal(size=(2, n, harmonics - 1))
        traj = make(free)
        value = condition(traj, chain, base)
        if value < best_cond:
            best, best_free, best_cond = traj, free, value
    step = 0.3
    for _ in range(rounds):
        free = best_free + step * rng.normal(size=best_free.shape)
        traj = make(free)
        value = condition(traj, chain, base)
        if value < best_cond:
            best, best_free, best_cond = traj, free, value
        else:
            step *= 0.9
    return best, best_cond
