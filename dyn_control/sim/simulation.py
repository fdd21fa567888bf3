"""Forward-dynamics simulation of a chain with a fixed step; pure numpy plus one compiled step.

A step (kernels.passive.simulation_step) is classical RK4, with tau held over the step, whose
stages take the passive torques that are smooth over it, and then one implicit velocity step,
as MuJoCo's, for the rest:
1. the stages: M q'' = tau - C(q, q') q' - g(q) - B_s q' + h, with B_s the damping of the
   joints where it is not stiff (dt B_i (M^-1)_ii <= 0.5) and h the other passive torques
   (Coulomb friction, stiff damping) held at what an implicit step from the start predicts;
2. the implicit step, h taken back out: (M + dt B_stiff) v = M v_rk4 - dt f + mu, with
   Coulomb friction a bounded force f (|f_i| <= friction_i: a joint inside its band sticks;
   a joint that stops within the step keeps its friction's sign until it stops) and each
   position limit a stop that only pushes out. passive_velocity solves that exactly, by
   active sets: which joints end at rest, and the directions of the others.

Why this scheme:
- Real URDFs put heavy damping on light links (xArm7: 10 N m s/rad on 1.4e-4 kg m^2, a time
  constant of 14 us against a 1 ms step), where damping inside an explicit step diverges, and
  friction as friction * sign(q') chatters and adds energy. Taken implicitly, neither can: in
  a fall with no input K + P rises by no more than integration error on every arm of
  example-robot-data (test/test_passive_physics.py).
- The stages must see the passive torques: without them, the controller's friction
  compensation runs the stages away and the step's end takes it back, and the Coriolis and
  gravity terms of the stages are evaluated where the arm never is. That made the step first
  order; with them it is second order in friction and RK4's in light damping, and a simulated
  real arm needs no substeps for identification (docs/simulator.md).
- Without damping, friction or a limit reached, the step is plain RK4, so the undamped
  accuracy is RK4's. Semi-implicit Euler (integrator semi_implicit_euler, every passive
  torque implicit) is kept for comparison; it drifts far more.
- The compiled step is entered from C (kernels/entry.py): 8.8 us on the UR5 with
  `Simulation.step` around it, against MuJoCo's RK4 mj_step's 7 (`make bench`); 14 us on the
  xArm7 with its damping and friction, against 13: the first stage reuses the forward
  dynamics that the passive prediction made at the same state. Its mass
  matrices come from the composite-rigid-body pass (kernels.mass_matrix.crba): equal to the
  controller's inverse-dynamics columns to round-off, in one pass instead of n, and computed by
  other code than the controller's.

`substeps` splits each dt into that many steps of dt / substeps, the torque held over all of
them; a simulated real arm runs with one (REAL_ARM_SUBSTEPS).

Applied effort is saturated to the effort limits. A step that produces a non-finite state is
undone: the state goes back to the last finite one, at rest, and `step` says so.

A push (`push`) is an external wrench on a link: J^T w joins the motor torques, unsaturated,
with J the link's Jacobian at the step's start (it is held over the step, as the torque is).
"""

import numpy as np

from dyn_control.controller.laws import all_finite, saturate
from dyn_control.dynamics import gravity_torques, mass_matrix
from dyn_control.kernels.entry import entry
from dyn_control.kernels.passive import at_stop, simulation_step
from dyn_control.kinematics import frame_jacobian
from dyn_control.model.layout import Data, with_gravity
from dyn_control.parameters import DEFAULT_DT, INTEGRATORS

REAL_ARM_SUBSTEPS = 1  # a simulated real arm's, to identify against (module docstring)


def stiff_joints(chain, q, dt=DEFAULT_DT):
    """Joints whose damping alone would settle within one step: [(index, inertia, tau_c)].

    inertia: the joint's effective inertia 1 / (M^-1)_ii at q (kg m^2 or kg, the others free);
    tau_c = inertia / damping (s), the damping's time constant, listed when shorter than dt.
    An explicit integrator is unstable there (Euler needs dt < 2 tau_c); the step here takes
    damping implicitly, but a simulator or a velocity-feedback loop that does not, will not cope.
    """
    inertia = 1.0 / np.diag(np.linalg.inv(mass_matrix(chain, q)))
    with np.errstate(divide="ignore"):
        tau_c = inertia / chain.damping
    return [(i, inertia[i], tau_c[i]) for i in np.flatnonzero(tau_c < dt)]


class Simulation:
    """State (q, qd) at time t of a chain driven by joint torques.

    q0: (n,) initial positions; dt: step (s); effort_limits: (n,) N m or N (inf: none);
    substeps: physics steps per dt (module docstring). gravity_compensated: the arm adds its
    own g(q) to every command, continuously, as the firmware of a Franka, a UR in direct torque
    or a KUKA in FRI's torque mode does: the step then runs without gravity, and `effort` (what
    the joints' torque sensors read) is the command plus g(q).
    """

    def __init__(self, chain, q0, dt=DEFAULT_DT, effort_limits=None, integrator="rk4",
                 substeps=1, gravity_compensated=False):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        if isinstance(substeps, bool) or int(substeps) != substeps or substeps < 1:
            raise ValueError(f"substeps must be a whole number >= 1, got {substeps!r}")
        self.substeps = int(substeps)
        self.gravity_compensated = bool(gravity_compensated)
        self.chain = chain
        self.dt = float(dt)
        self.integrator = integrator
        self.q = np.array(q0, dtype=float)
        if self.q.shape != (chain.n,) or not np.all(np.isfinite(self.q)):
            raise ValueError(f"q0 must be {chain.n} finite values, got {self.q.tolist()}")
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"dt must be > 0 s, got {dt}")
        self.qd = np.zeros(chain.n)
        self.tau = np.zeros(chain.n)  # the command applied, after saturation
        self.effort = self.tau  # the joints' torques over the last step: tau, plus g if compensated
        self.t = 0.0
        self.steps = 0
        self.blowups = 0  # steps undone because the state became non-finite
        self.stop_steps = 0  # steps that ended with a joint on one of its stops
        self.effort_limits = (np.full(chain.n, np.inf) if effort_limits is None
                              else np.asarray(effort_limits, dtype=float))
        # the stops the step enforces (the chain's cleaned bounds; chain.lower/upper are the URDF's)
        self.position_min, self.position_max = (chain.position_min.copy(),
                                                chain.position_max.copy())
        self.damping, self.friction = chain.damping.copy(), chain.friction.copy()
        self.external = None  # (link, wrench (6,)) of a push
        self.unpushed = np.zeros(chain.n)  # external_torques between pushes
        self.unpushed.flags.writeable = False
        self.external_torques = self.unpushed  # J^T wrench of the push over the last step

    @property
    def chain(self):
        return self._chain

    @chain.setter
    def chain(self, chain):
        """The model the steps run (a new payload: from the next step on)."""
        self._chain = chain
        pack = with_gravity(chain.pack, np.zeros(3)) if self.gravity_compensated else chain.pack
        self.data = Data(pack)  # the step's workspace, and the model it packs
        self.entry = entry(pack)  # the step from C, over a workspace of its own

    def push(self, wrench, link=None):
        """From the next step on, until the next push: the wrench (6,) [force N; moment N m],
        base axes, applied at the origin of `link` (default: the tip link; any link the chain
        moves). A zero wrench ends the push. ValueError names a bad link or value.
        """
        wrench = np.array(wrench, dtype=float).reshape(-1)
        if wrench.shape != (6,) or not np.all(np.isfinite(wrench)):
            raise ValueError("a push is 6 finite values (force N, moment N m), "
                             f"got {wrench.tolist()}")
        link = link or self.chain.tip_link
        self.chain.frame(link)
        self.external = (link, wrench) if np.any(wrench) else None

    def step(self, tau):
        """Advance one dt with joint torques tau (n,), saturated to the effort limits.

        Returns True, or False when the step blew up (non-finite state, or a mass matrix that
        is no longer positive definite): then the arm is put back at its last finite position,
        at rest, and time still advances.
        """
        self.tau = saturate(np.array(tau, dtype=float), self.effort_limits)
        applied = self.tau
        if self.external is not None:
            link, wrench = self.external
            self.external_torques = frame_jacobian(self.chain, self.q, link).T @ wrench
            applied = self.tau + self.external_torques
        else:  # the same read-only zeros every step: asking any() of them cost 1 us a step
            self.external_torques = self.unpushed
        q, qd = self.q, self.qd
        if self.gravity_compensated:
            g = gravity_torques(self.chain, q)
        rk4, finite = self.integrator == "rk4", True
        try:
            for _ in range(self.substeps):
                # C, whose answer is finite; None where it raised or blew up (the dispatcher
                # then raises, or gives the non-finite state checked below)
                stepped = self.entry.simulation_step(
                    q, qd, applied, self.damping, self.friction, self.position_min,
                    self.position_max, self.dt / self.substeps, rk4)
                if stepped is None:
                    stepped = simulation_step(
                        *self.data.args, q, qd, applied, self.damping, self.friction,
                        self.position_min, self.position_max, self.dt / self.substeps, rk4)
                    finite = finite and all_finite(stepped[0]) and all_finite(stepped[1])
                q, qd = stepped
        except ValueError:  # Cholesky of a non-finite or indefinite mass matrix
            finite = False
        if not finite:
            q, qd = self.q, np.zeros_like(self.qd)
            self.tau = np.zeros_like(self.tau)
            self.blowups += 1
        # the compensation's torque over the step, by the trapezoid
        self.effort = (self.tau + 0.5 * (g + gravity_torques(self.chain, q))
                       if self.gravity_compensated else self.tau)
        self.q, self.qd = q, qd
        if self.at_stop():
            self.stop_steps += 1
        self.steps += 1
        self.t = self.steps * self.dt
        return finite

    def at_stop(self):
        """Whether a joint is on one of its stops (what a real arm's firmware stops for)."""
        return at_stop(self.q, self.position_min, self.position_max)  # (numpy's two any(): 3 us)

    def hold(self):
        """Advance one dt with the joints braked: time passes, the arm does not move."""
        self.qd = np.zeros_like(self.qd)
        self.tau = self.effort = np.zeros_like(self.tau)
        self.steps += 1
        self.t = self.steps * self.dt
