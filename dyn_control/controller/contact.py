"""The observe stage, after the command is out: the external joint torques from the momentum
observer (dyn_control.controller.observer), the wrench at each ee_link, and Franka's two levels, in
one compiled call (kernels.momentum.observe).
Contact is reported while it lasts; a collision is latched until a reset, which is refused
while the arm is still in contact. The reaction to a collision (a switch of law) is the core's.

Internally r is the torque the world applies to the joints (De Luca's residual); what the
topics publish is the node's business (Franka's sign, dyn_control.nodes.controller_topics).
"""

import numpy as np

from dyn_control.controller.laws import ControlLaw
from dyn_control.controller.observer import FRICTION_VELOCITY, SINGULAR_VALUE, MomentumObserver
from dyn_control.kernels import momentum

LEVELS = ("contact", "collision")


class ContactMonitor:
    """The observer of the current model and the levels; `observe` per joint state."""

    def __init__(self, say):
        self.say = say
        self.settings = self.observer = None
        self.contact = ""  # what is over its contact level now, "" when nothing
        self.collision = ""  # the latched collision's reason, "" when none
        self.collisions = 0  # collisions latched since the start
        self.forces = None  # (k, 6) wrench at each ee_link at the last state, when computed
        self.singular = ()  # the ee_links whose Jacobian was singular at the last wrench
        self.held = False  # whether the last state was one the drives did not move (observe)

    def configure(self, model, settings, ee_links, limits, joint):
        """settings: controller.settings.Contact, or None (off); limits, the effort limits, and
        joint (settings.JointLaw), the friction compensation and the period of comply's law. A
        new model (a payload) starts a new observer that keeps r: the estimate carries on and
        converges to the new model's.
        """
        self.settings, self.ee_links = settings, ee_links
        if settings is None:
            self.observer = None
            return
        self.frames = [model.frame(link) for link in ee_links]
        self.check_forces = settings.force_contact > 0 or settings.force_collision > 0
        # the compiled observe stage's arguments: the frames whose wrench it computes each
        # tick (none when no force level is on: the topics then ask at their own rate), the
        # levels, and what it fills
        self.bodies, *offsets = model.frame_arrays(ee_links if self.check_forces else [])
        self.offsets = tuple(offsets)
        self.joint_levels = np.array([settings.joint_torque_contact,
                                      settings.joint_torque_collision], dtype=float)
        self.force_levels = np.array([settings.force_contact, settings.force_collision], float)
        self.forces, self.flags = np.zeros((len(ee_links), 6)), np.zeros(len(ee_links), bool)
        self.found = np.zeros((2, 2), dtype=np.int64)
        zero = np.zeros(model.n)  # comply: tau = g(q) - I(q) D qd, the damping compensated
        self.comply_law = ControlLaw(model, "gravity_pd", zero, settings.comply_damping, limits,
                                     joint.friction_compensation, period=joint.period)
        kept = self.observer
        if kept is None or kept.chain is not model or kept.gain != settings.observer_gain:
            self.observer = MomentumObserver(model, settings.observer_gain,
                                             r=None if kept is None else kept.r)
            if kept is not None:  # the estimate carries on: so does its friction bound
                self.observer.band[:] = kept.band

    @property
    def reacting(self):
        """Whether a collision is latched that the controller reacts to."""
        return bool(self.collision) and self.settings.reaction != "none"

    @property
    def refusal(self):
        """Why a new goal is refused now, or None."""
        return f"{self.collision}: call ~/reset_collision first" if self.reacting else None

    def comply(self, q, qd, dt):
        """comply's torque at (q, qd): gravity compensation with damping."""
        return self.comply_law(q, qd, q, np.zeros_like(q), np.zeros_like(q), dt)[0]

    def restart(self):
        if self.observer is not None:
            self.observer.restart()

    def observe(self, state, command, effort=None):
        """Take a state (t, q, qd), the last command sent and the state's measured effort (None:
        none). The torque applied since the last state is the measured one where there is one
        (a command can come late, or be zeroed by the hardware's timeout), else the command;
        before the first command (brakes may hold the arm) the integral starts at each state,
        and so it does while the measured effort is all zero under a nonzero command: the
        drives apply none of it (brakes still on, a drive not yet enabled), and what holds the
        arm then is not contact (a simulator braked past its first command under load read as
        a 34 N collision at Tiago's hand). It starts again at the first state after such a
        held one too: a state lost in between (the subscription keeps the newest only) may
        have been held, and its effort, zero against this one's, would be taken as this
        one's (Tiago++'s torso, released 18 N into a 473 N soft start, read 21.67 N).
        Returns the reason of a collision latched by this state, or None.
        """
        if self.observer is None:
            return None
        t, q, qd = state
        applied = command if command is None or effort is None else effort
        held = applied is None or (effort is not None and not effort.any() and command.any())
        if held or self.held:
            self.observer.restart()
        self.held = held
        if held:
            applied = np.zeros_like(q)
        ob = self.observer
        singular = momentum.observe(
            *ob.data.args, q, qd, applied, ob.damping, ob.friction, FRICTION_VELOCITY,
            *ob.step(t), ob.memory, ob.r, ob.band, ob.felt, self.bodies, *self.offsets,
            SINGULAR_VALUE, self.forces, self.flags, self.joint_levels, self.force_levels,
            self.found)
        if singular or self.singular:
            self._flag_singular()
        contact, collision = self.found.tolist()  # (kind, index) at each level: usually none
        self.contact = self._over(0, *contact) if contact[0] else ""
        if self.collision or not collision[0]:
            return None
        self.collision, self.collisions = self._over(1, *collision), self.collisions + 1
        return self.collision

    def _over(self, level, kind, i):
        """What the observe stage found over `level` (0 contact, 1 collision): kind 1, joint i;
        2, ee_link i; said as "collision on joint4: 31.20 N·m over 20.0".
        """
        if kind == 1:
            value, limit = self.observer.felt[i], self.joint_levels[level, i]
            return (f"{LEVELS[level]} on {self.observer.chain.joint_names[i]}: {value:.2f} N·m "
                    f"over {limit:.1f}")
        value, limit = np.linalg.norm(self.forces[i, :3]), self.force_levels[level]
        return f"{LEVELS[level]} at {self.ee_links[i]}: {value:.2f} N over {limit:.1f}"

    def _flag_singular(self):
        self.singular = tuple(link for link, flag in zip(self.ee_links, self.flags) if flag)

    def wrenches(self, q):
        """(k, 6) wrench that the world applies at each ee_link, base axes [N; N m], from the
        current residual (kept in `forces`; the links whose Jacobian is singular there in
        `singular`).
        """
        for k, frame in enumerate(self.frames):
            self.flags[k] = self.observer.wrench(q, frame, self.forces[k])
        self._flag_singular()
        return self.forces

    def current_wrenches(self, q):
        """`wrenches` at q, or those the observe stage computed this tick when it checks forces
        (the same residual: not computed twice).
        """
        return self.forces if self.check_forces else self.wrenches(q)

    def reset(self):
        """Clear the latch -> (done, message). Refused while a contact level is exceeded."""
        if not self.collision:
            return True, "no collision latched"
        if self.contact:
            return False, f"refused: still in {self.contact}"
        cleared, self.collision = self.collision, ""
        return True, f"cleared: {cleared}"
