"""The observe stage, before the reference and the law: the external joint torques from the
momentum observer (dyn_control.observer), the wrench at each ee_link, and Franka's two levels.
Contact is reported while it lasts; a collision is latched until a reset, which is refused
while the arm is still in contact. The reaction to a collision (a switch of law) is the core's.

Internally r is the torque the world applies to the joints (De Luca's residual); what the
topics publish is the node's business (Franka's sign, dyn_control.nodes.controller_topics)."""

import numpy as np

from .. import kinematics
from ..control import ControlLaw
from ..observer import MomentumObserver, wrench_at


def _over(values, levels, what, unit, names):
    """The first value over its level (levels > 0 only), said as "collision on joint4: 31.2
    N·m over 20.0" (what, name, value, unit, level), or None."""
    for name, value, level in zip(names, values, levels):
        if 0 < level < abs(value):
            return f"{what} {name}: {value:.2f} {unit} over {level:.1f}"
    return None


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

    def observe(self, state, applied):
        """Take a state (t, q, qd) and the torque applied since the last (None: not known, the
        integral starts here). Returns the reason of a collision latched by this state, or None."""
        if self.observer is None:
            return None
        t, q, qd = state
        if applied is None:
            self.observer.restart()
            applied = np.zeros_like(q)
        r = self.observer.update(t, q, qd, applied)
        s, names = self.settings, self.observer.chain.joint_names
        forces = s.force_contact > 0 or s.force_collision > 0
        self.forces = self.wrenches(q)[0] if forces else None
        norms = [] if self.forces is None else np.linalg.norm(self.forces[:, :3], axis=1)
        self.contact = (_over(r, s.joint_torque_contact, "contact on", "N·m", names)
                        or _over(norms, [s.force_contact] * len(norms), "contact at", "N",
                                 self.ee_links) or "")
        if self.collision:
            return None
        hit = (_over(r, s.joint_torque_collision, "collision on", "N·m", names)
               or _over(norms, [s.force_collision] * len(norms), "collision at", "N",
                       self.ee_links))
        if hit is None:
            return None
        self.collision, self.collisions = hit, self.collisions + 1
        return hit

    def wrenches(self, q):
        """((k, 6) wrench that the world applies at each ee_link, base axes [N; N m], (k,) bool
        whether its Jacobian is singular there) from the current residual."""
        model, r = self.observer.chain, self.observer.r
        found = [wrench_at(kinematics.frame_jacobian(model, q, link), r) for link in self.ee_links]
        self.singular = tuple(link for link, (_, s) in zip(self.ee_links, found) if s)
        return np.array([F for F, _ in found]), np.array([s for _, s in found])

    def reset(self):
        """Clear the latch -> (done, message). Refused while a contact level is exceeded."""
        if not self.collision:
            return True, "no collision latched"
        if self.contact:
            return False, f"refused: still in {self.contact}"
        cleared, self.collision = self.collision, ""
        return True, f"cleared: {cleared}"
