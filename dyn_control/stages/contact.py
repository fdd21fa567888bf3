"""The observe stage, before the reference and the law: the external joint torques from the
momentum observer (dyn_control.observer), the wrench at each ee_link, and Franka's two levels.
Contact is reported while it lasts; a collision is latched until a reset, which is refused
while the arm is still in contact. The reaction to a collision (a switch of law) is the core's.

Internally r is the torque the world applies to the joints (De Luca's residual); what the
topics publish is the node's business (Franka's sign, dyn_control.nodes.controller_topics)."""

import numpy as np

from ..control import ControlLaw
from ..kernels.compile import jit
from ..observer import MomentumObserver


@jit
def first_over(values, levels):
    """The index of the first |value| over its level (levels > 0 only), or -1: a tick's check,
    compiled (a Python loop over numpy scalars cost 3 us a check)."""
    for i in range(values.shape[0]):
        if 0 < levels[i] < abs(values[i]):
            return i
    return -1


def _over(values, levels, what, unit, names):
    """The first value over its level, said as "collision on joint4: 31.20 N·m over 20.0"
    (what, name, value, unit, level), or None."""
    i = first_over(values, levels)
    return None if i < 0 else f"{what} {names[i]}: {values[i]:.2f} {unit} over {levels[i]:.1f}"


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

    def configure(self, model, settings, ee_links, limits, joint):
        """settings: stages.settings.Contact, or None (off); limits, the effort limits, and
        joint (settings.JointLaw), the friction compensation and the period of comply's law. A
        new model (a payload) starts a new observer that keeps r: the estimate carries on and
        converges to the new model's."""
        self.settings, self.ee_links = settings, ee_links
        if settings is None:
            self.observer = None
            return
        self.frames = [model.frame(link) for link in ee_links]
        self.check_forces = settings.force_contact > 0 or settings.force_collision > 0
        self.force_levels = np.array([[settings.force_contact] * len(ee_links),
                                      [settings.force_collision] * len(ee_links)])
        zero = np.zeros(model.n)  # comply: tau = g(q) - I(q) D qd, the damping compensated
        self.comply_law = ControlLaw(model, "gravity_pd", zero, settings.comply_damping, limits,
                                     joint.friction_compensation, period=joint.period)
        kept = self.observer
        if kept is None or kept.chain is not model or kept.gain != settings.observer_gain:
            self.observer = MomentumObserver(model, settings.observer_gain,
                                             r=None if kept is None else kept.r)

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
        before the first command (brakes may hold the arm) the integral starts at each state.
        Returns the reason of a collision latched by this state, or None."""
        if self.observer is None:
            return None
        t, q, qd = state
        applied = command if command is None or effort is None else effort
        if applied is None:
            self.observer.restart()
            applied = np.zeros_like(q)
        r = self.observer.update(t, q, qd, applied)
        s, names = self.settings, self.observer.chain.joint_names
        norms = self.wrenches(q)[:, :3] if self.check_forces else None
        if norms is not None:
            norms = np.sqrt((norms * norms).sum(axis=1))
        forces = lambda level: (None if norms is None else  # noqa: E731
                                _over(norms, self.force_levels[level], f"{LEVELS[level]} at", "N",
                                      self.ee_links))
        self.contact = (_over(r, s.joint_torque_contact, "contact on", "N·m", names)
                        or forces(0) or "")
        if self.collision:
            return None
        hit = _over(r, s.joint_torque_collision, "collision on", "N·m", names) or forces(1)
        if hit is None:
            return None
        self.collision, self.collisions = hit, self.collisions + 1
        return hit

    def wrenches(self, q):
        """(k, 6) wrench that the world applies at each ee_link, base axes [N; N m], from the
        current residual (kept in `forces`; the links whose Jacobian is singular there in
        `singular`)."""
        if self.forces is None or len(self.forces) != len(self.frames):
            self.forces = np.zeros((len(self.frames), 6))
        flags = [self.observer.wrench(q, frame, F) for frame, F in zip(self.frames, self.forces)]
        self.singular = tuple(link for link, flag in zip(self.ee_links, flags) if flag)
        return self.forces

    def reset(self):
        """Clear the latch -> (done, message). Refused while a contact level is exceeded."""
        if not self.collision:
            return True, "no collision latched"
        if self.contact:
            return False, f"refused: still in {self.contact}"
        cleared, self.collision = self.collision, ""
        return True, f"cleared: {cleared}"
