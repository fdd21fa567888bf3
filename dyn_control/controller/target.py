"""The reference stage of cartesian_impedance: per ee_link the target pose and the filtered target
the law tracks, the feed-forward wrenches and the posture. It is entered at the first tick in
the mode (the current pose becomes the target), unless the stiffness is beyond what the
control period holds at that pose: then the arm holds its joints, and `refused` says why.
"""

import numpy as np

from dyn_control import kinematics
from dyn_control.parameters import CARTESIAN_IMPEDANCE


def too_stiff(cartesian, q, period):
    """Why the Cartesian stiffness is beyond what `period` holds at q, or None. Its stiffest
    mode at critical damping asks kd = 2 w: the sampled loop's kd T < 2 (control.py) is w T < 1.
    """
    fastest = cartesian.fastest_mode(q)
    if fastest * period <= 1.0:
        return None
    return (f"cartesian_stiffness: the stiffest mode of the arm at this pose is {fastest:.0f} "
            f"rad/s, beyond 1/control_period ({1 / period:.0f} rad/s): the loop can oscillate; "
            "lower the stiffness, or set operational_space")


class Task:
    """What cartesian_impedance reads, per ee_link k: the target pose targets[k] (R (3, 3), p
    (3,) m, base frame) and the filtered target the law tracks; the feed-forward wrenches w
    (6 f,) and the posture q_n (n,); and the last pose error (6 f,).
    """

    def __init__(self, poses, posture):
        self.targets, self.filtered = list(poses), list(poses)
        self.wrench = np.zeros(6 * len(poses))
        self.posture = posture
        self.error = np.zeros(6 * len(poses))
        self.stacked = None  # the filtered targets as the law takes them, while they hold

    @property
    def target(self):
        """The first (or only) ee_link's target pose."""
        return self.targets[0]

    def step(self, dt, time_constant):
        """The filtered targets after dt s, (R (f, 3, 3), p (f, 3)): first order toward each
        target with time_constant (s; 0: the target itself), position and rotation (along the
        geodesic) alike.
        """
        moved = self.stacked is None
        for k, ((R_f, p_f), (R_t, p_t)) in enumerate(zip(self.filtered, self.targets)):
            if time_constant <= 0:
                moved = moved or self.filtered[k] is not self.targets[k]
                self.filtered[k] = self.targets[k]
            else:
                share = dt / (time_constant + dt)
                turn = kinematics.rotation_exp(share * kinematics.rotation_log(R_f.T @ R_t))
                self.filtered[k], moved = (R_f @ turn, p_f + share * (p_t - p_f)), True
        if moved:  # (a target is replaced when set, never changed in place)
            self.stacked = (np.array([R for R, _ in self.filtered]),
                            np.array([p for _, p in self.filtered]))
        return self.stacked


class CartesianTarget:
    """The running Task (`task`, None until entered) and why the mode was not entered
    (`refused`, None when it was or was not tried).
    """

    def __init__(self, say):
        self.say = say
        self.task = self.refused = None

    def configure(self, settings, cartesian):
        """New settings (settings.ControllerSettings) and the law they built: the next tick
        tries the mode again.
        """
        self.settings, self.cartesian, self.refused = settings, cartesian, None

    def enter(self, q):
        """Take the current pose as the target and the posture (or nullspace_posture) as q_n.
        Not when the stiffness is beyond what the control period holds at this pose (settings
        given before any state, so not refused then): the arm holds its joints where they are
        instead, `refused` says why, until new settings come. Returns whether it entered.
        """
        s = self.settings
        problem = too_stiff(self.cartesian, q, s.joint.period)
        if problem:
            if self.refused is None:
                self.refused = f"cartesian_impedance not entered, the joints hold: {problem}"
                self.say("error", self.refused)
            return False
        poses = [kinematics.frame_pose(s.model, q, link) for link in s.cartesian.ee_link]
        posture = s.nullspace_posture
        self.task = Task(poses, np.array(q if posture is None else posture, dtype=float))
        return True

    def running(self, what, state):
        """The running Task, entered now if the mode just switched; ValueError otherwise."""
        mode = self.settings.mode
        if mode != CARTESIAN_IMPEDANCE:
            raise ValueError(f"{what} ignored: the controller is in {mode} mode (set mode to "
                             f"{CARTESIAN_IMPEDANCE})")
        if self.task is None:
            if state is None:
                raise ValueError(f"{what} ignored: no joint state yet")
            if not self.enter(state[1]):
                raise ValueError(f"{what} ignored: {self.refused}")
        return self.task

    def set_pose(self, state, R, p, frame=0):
        """The target pose of ee_link number `frame`: R (3, 3), p (3,) m in the base frame."""
        self.running("target_pose", state).targets[frame] = (
            np.array(R, dtype=float), np.array(p, dtype=float))

    def set_wrench(self, state, wrench, frame=0):
        """The feed-forward wrench (6,) [force N; moment N m], base axes, on ee_link `frame`."""
        task = self.running("target_wrench", state)
        w = task.wrench.copy()
        w[6 * frame:6 * frame + 6] = wrench
        task.wrench = w

    def set_joint(self, state, index, positions):
        """Posture positions (rad or m) for the chain joints `index`; the others keep theirs."""
        task = self.running("target_joint", state)
        posture = task.posture.copy()
        posture[np.asarray(index)] = positions
        task.posture = posture

    def reference(self, q, dt):
        """(R_d (f, 3, 3), p_d (f, 3)) the law tracks after dt s, entering the mode if it must;
        None when it cannot be entered (the joints hold).
        """
        if self.task is None and not self.enter(q):
            return None
        return self.task.step(dt, self.settings.target_filter)
