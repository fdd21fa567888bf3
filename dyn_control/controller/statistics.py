"""What the controller counts and reports: the law's compute time over the last ticks, ticks,
saturated ticks, and the whole of what /diagnostics says (report).
"""

import time
from collections import deque

import numpy as np

from dyn_control import kinematics
from dyn_control.cores import REPORT_EVERY


class Statistics:
    """Compute times (s) of the last 5000 ticks, ticks, saturated ticks; `timing()` starts a
    tick's clock and `tick(tau, limits, t, say)` stops it. The observe stage's times, after
    the command, likewise: `observing()` and `observed()`.
    """

    def __init__(self):
        self.compute_s = deque(maxlen=5000)
        self.observe_s = deque(maxlen=5000)
        self.ticks = self.saturated = 0
        self.next_report = -np.inf
        self.start = None

    def timing(self):
        self.start = time.perf_counter()

    def tick(self, saturated, t, say):
        """Count a tick at state time t, and whether its torque was at an effort limit; every
        REPORT_EVERY s of it, say the compute time.
        """
        self.compute_s.append(time.perf_counter() - self.start)
        self.ticks += 1
        self.saturated += bool(saturated)
        if t >= self.next_report:
            self.next_report = t + REPORT_EVERY
            say("info", self.report())

    def observing(self):
        self.observe_start = time.perf_counter()

    def observed(self):
        self.observe_s.append(time.perf_counter() - self.observe_start)

    def compute_times(self, times=None):
        """(p50, p99, max) us of the compute time, from a state to its command, over the last
        5000 ticks (times: the observe stage's instead); zeros: none.
        """
        times = self.compute_s if times is None else times
        us = np.array(times) * 1e6 if times else np.zeros(1)
        return tuple(round(float(x), 1) for x in np.percentile(us, (50, 99, 100)))

    def report(self):
        """The compute time, for the log."""
        if not self.compute_s:
            return "compute time: no ticks yet"
        p50, p99, worst = self.compute_times()
        return (f"compute time over {len(self.compute_s)} ticks: p50 {p50:.1f} us, "
                f"p99 {p99:.1f} us, max {worst:.1f} us")


def report(core):
    """(level "OK" | "WARN", message, {key: value}): what /diagnostics reports of a core."""
    stats, watchdog, s = core.stats, core.watchdog, core.settings
    p50, p99, worst = stats.compute_times()
    refused, contact, guard = core.target.refused, core.contact, core.guard
    mode = ("waiting for joint states" if core.state is None else
            "holding: no good joint state" if watchdog.stale else
            f"holding: {guard.fault}" if guard.fault else
            f"collision, {s.contact.reaction}: {contact.collision}" if contact.collision else
            "holding: " + refused if refused else "tracking")
    values = {
        "mode": s.mode, "ticks": stats.ticks, "compute_p50_us": p50, "compute_p99_us": p99,
        "compute_max_us": worst, "compute_window_ticks": len(stats.compute_s),
        "saturated_ticks": stats.saturated, "stale_state_events": watchdog.events,
        "payload_kg": s.payload_kg}
    if core.overloads:
        values["start_pose_not_held"] = "; ".join(core.overloads)
    if guard.enabled:
        values.update({
            "limit_barrier_ticks": guard.ticks,
            "limit_barrier_torque_max_nm": round(float(np.abs(guard.torque).max()), 6),
            "velocity_fault": guard.fault or "none", "velocity_faults": guard.faults,
            "targets_clamped": guard.clamped})
        if core.state is not None:
            rooms = guard.rooms(core.state[1])
            for name, room in rooms.items():
                values[f"limit_room.{name}"] = room
            if rooms:
                name = min(rooms, key=rooms.get)
                values["limit_closest_joint"], values["limit_closest_room"] = name, rooms[name]
            for link, (room, force) in guard.wall_report(*core.state[1:]).items():
                values[f"wall_room_m.{link}"] = round(room, 6)
                values[f"wall_force_n.{link}"] = round(force, 6)
        if guard.walls_refused:
            values["walls_set_aside"] = guard.walls_refused
    started = core.goals.started
    for key, value in (("trajectory_start_s", started and started[0]),
                       ("trajectory_end_s", started and started[1]),
                       ("stale_silence_s", watchdog.silence),
                       ("payload_since_s", core.payload_since)):
        if value is not None:
            values[key] = round(float(value), 6)
    task = core.target.task
    if task is not None and core.state is not None:
        q = core.state[1]
        links = s.cartesian.ee_link
        e = task.error.reshape(len(links), 6)
        J = core.cartesian.jacobian(q)
        # the worst frame's errors; with several ee_links each frame's, by name
        values.update({
            "pose_error_m": float(np.linalg.norm(e[:, :3], axis=1).max()),
            "pose_error_rad": float(np.linalg.norm(e[:, 3:], axis=1).max()),
            "nullspace_error_rad": float(np.linalg.norm(task.posture - q)),
            "manipulability": kinematics.manipulability(J)})
        if len(links) > 1:
            for link, ek in zip(links, e):
                values[f"{link}.pose_error_m"] = float(np.linalg.norm(ek[:3]))
    if contact.observer is not None:
        o50, o99, _ = stats.compute_times(stats.observe_s)  # after the command, per state
        values.update({
            "observe_p50_us": o50, "observe_p99_us": o99,
            "external_torque_max_nm": round(float(np.abs(contact.observer.felt).max()), 6),
            "contact": contact.contact or "none", "collision": contact.collision or "none",
            "collisions": contact.collisions,
            "external_wrench_singular_at": ", ".join(contact.singular) or "none"})
        if contact.check_forces:  # computed at every state only with a force level on
            values["external_force_n"] = round(float(
                np.linalg.norm(contact.forces[:, :3], axis=1).max()), 6)
    return ("WARN" if (watchdog.stale or refused or contact.collision or core.overloads
                       or guard.fault or guard.walls_refused) else "OK",
            mode, values)
