"""Forward-dynamics simulation of a chain with a fixed step; pure numpy.

q'' = FD(q, q', tau - damping q' - friction sign(q')), integrated with classical RK4 at a
fixed step dt with the applied torque held over the step. RK4 was chosen by measured energy
drift in 10 s of undamped free fall at dt = 1 ms (test/test_simulation.py): max |E - E0| was
1e-3 J on the default arm (kinetic energy up to 125 J) and 4e-7 J on the seeds' 2R arm, where
semi-implicit Euler drifted 2.3 J on the 2R arm and diverged on the default arm after 3.4 s.
RK4 costs four forward-dynamics calls a step, about 70 us for 7 joints.
Applied effort is saturated to the effort limits; a joint that reaches a position limit stops
there (position clamped, velocity into the limit zeroed). A step that produces a non-finite
state is undone: the state goes back to the last finite one, at rest, and `step` says so.
"""

import numpy as np

from .dynamics import forward_dynamics

INTEGRATORS = ("rk4", "semi_implicit_euler")


class Simulation:
    """State (q, qd) at time t of a chain driven by joint torques.

    q0: (n,) initial positions; dt: step (s); effort_limits: (n,) N m or N (inf: none).
    """

    def __init__(self, chain, q0, dt=1e-3, effort_limits=None, integrator="rk4"):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        self.chain = chain
        self.dt = float(dt)
        self.integrator = integrator
        self.q = np.array(q0, dtype=float)
        self.qd = np.zeros(chain.n)
        self.tau = np.zeros(chain.n)  # applied, after saturation
        self.t = 0.0
        self.steps = 0
        self.blowups = 0  # steps undone because the state became non-finite
        self.effort_limits = (np.full(chain.n, np.inf) if effort_limits is None
                              else np.asarray(effort_limits, dtype=float))
        lower, upper = chain.lower, chain.upper
        limited = lower < upper  # lower >= upper (e.g. both 0, unspecified) means no limit
        self.lower = np.where(limited, lower, -np.inf)
        self.upper = np.where(limited, upper, np.inf)
        self.damping, self.friction = chain.damping, chain.friction

    def acceleration(self, q, qd, tau):
        """q'' (n,) under tau with the joints' viscous damping and Coulomb friction."""
        passive = self.damping * qd + self.friction * np.sign(qd)
        return forward_dynamics(self.chain, q, qd, tau - passive)

    def step(self, tau):
        """Advance one dt with joint torques tau (n,), saturated to the effort limits.

        Returns True, or False when the step blew up (non-finite state, or a mass matrix that
        is no longer positive definite): then the arm is put back at its last finite position,
        at rest, and time still advances.
        """
        self.tau = np.clip(np.asarray(tau, dtype=float), -self.effort_limits, self.effort_limits)
        try:
            q, qd = self._integrate(self.q, self.qd, self.dt)
            finite = bool(np.all(np.isfinite(q)) and np.all(np.isfinite(qd)))
        except ValueError:  # Cholesky of a non-finite or indefinite mass matrix
            finite = False
        if not finite:
            q, qd = self.q, np.zeros_like(self.qd)
            self.tau = np.zeros_like(self.tau)
            self.blowups += 1
        below, above = q < self.lower, q > self.upper
        q = np.clip(q, self.lower, self.upper)
        qd = np.where((below & (qd < 0)) | (above & (qd > 0)), 0.0, qd)
        self.q, self.qd = q, qd
        self.steps += 1
        self.t = self.steps * self.dt
        return finite

    def _integrate(self, q, qd, h):
        if self.integrator == "rk4":
            k1v, k1a = qd, self.acceleration(q, qd, self.tau)
            k2v = qd + 0.5 * h * k1a
            k2a = self.acceleration(q + 0.5 * h * k1v, k2v, self.tau)
            k3v = qd + 0.5 * h * k2a
            k3a = self.acceleration(q + 0.5 * h * k2v, k3v, self.tau)
            k4v = qd + h * k3a
            k4a = self.acceleration(q + h * k3v, k4v, self.tau)
            q = q + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
            qd = qd + h / 6 * (k1a + 2 * k2a + 2 * k3a + k4a)
        else:
            qd = qd + h * self.acceleration(q, qd, self.tau)
            q = q + h * qd
        return q, qd

    def hold(self):
        """Advance one dt with the joints braked: time passes, the arm does not move."""
        self.qd = np.zeros_like(self.qd)
        self.tau = np.zeros_like(self.tau)
        self.steps += 1
        self.t = self.steps * self.dt
