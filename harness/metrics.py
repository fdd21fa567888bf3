"""Figures of a recorded loop (harness/loop.py): tracking errors, the Cartesian demo's figures,
which watchdogs fired, and the nodes' /diagnostics written out as lines.
"""

import numpy as np

from .loop import CONTROLLER_NODE


def cartesian_figures(result, stiffness, push_force):
    """The demo's figures: the circle's position error (RMS, max, m) and largest orientation
    error (rad) against the target, the displacement from the target at the end of the push
    against F/K (m, per axis: the static stiffness), how far from the target it is at the end
    (m), and the largest torque.
    """
    from dyn_control.kinematics import quaternion_matrix, rotation_log

    t, p, quat = result["pose"]
    tt, pt, quat_t = result["target"]
    phases = result["phases"]
    # the target in force at each pose stamp: the last one published at or before it
    k = np.clip(np.searchsorted(tt, t, side="right") - 1, 0, len(tt) - 1)
    error = np.linalg.norm(p - pt[k], axis=1)
    rotation = np.array([np.linalg.norm(rotation_log(quaternion_matrix(*a)
                                                     @ quaternion_matrix(*b).T))
                         for a, b in zip(quat_t[k], quat)])
    circle = (t >= phases["circle"]) & (t <= phases["circle_end"])
    pushed = (t >= phases["push_end"] - 0.2) & (t < phases["push_end"])
    after = t >= phases["end"] - 0.2
    displacement = (p - pt[k])[pushed].mean(axis=0)
    expected = np.asarray(push_force, dtype=float) / np.asarray(stiffness, dtype=float)[:3]
    effort = result["states"][2]
    return {"circle_rms_m": float(np.sqrt(np.mean(error[circle] ** 2))),
            "circle_max_m": float(error[circle].max()),
            "orientation_max_rad": float(rotation[circle].max()),
            "push_displacement_m": displacement, "push_expected_m": expected,
            "released_error_m": float(np.linalg.norm((p - pt[k])[after].mean(axis=0))),
            "torque_max": float(np.abs(effort).max()) if effort.size else float("nan"),
            "t": t, "error": error, "rotation": rotation}


def spans(t, end, bins=4):
    """Whether recorded times t have a sample in each of `bins` equal parts of [0, end]: the
    recording covers the run (that the loop reached `end`, closed_loop checks). A recorder on a
    loaded machine misses ticks, whole stretches of them (the controller's publishers keep 10
    samples for a lagging subscriber; with two CPU hogs beside the suite a recorder missed 1.5 s
    of a 10 s run, and the last 1.5 s of a 6 s one), so a count of samples, a largest gap or
    the last sample's time would measure the recorder, not the loop.
    """
    counts, _ = np.histogram(t, bins=bins, range=(0.0, end))
    return len(t) > 0 and counts.min() > 0


FAULT_COUNTS = {CONTROLLER_NODE: ("stale_state_events",),
                "dynamics_simulator": ("blowups", "command_timeouts")}


def faults(result):
    """{node.counter: count} of the watchdogs and blow-ups that fired, from each node's last
    /diagnostics status ({} when none did; a node that reported nothing counts as a fault).
    """
    found = {}
    for node, keys in FAULT_COUNTS.items():
        values = result["diagnostics"].get(node)
        if values is None:
            found[node] = "no /diagnostics"
            continue
        found.update({f"{node}.{key}": values[key] for key in keys if values[key]})
    return found


def tracking_figures(result):
    """Per-joint RMS and max |error| (rad)."""
    e = result["error"]
    return np.sqrt(np.mean(e**2, axis=0)), np.max(np.abs(e), axis=0)


CONTROLLER_LINE = ("compute time over the last {compute_window_ticks:.0f} ticks: p50 "
                   "{compute_p50_us} us, p99 {compute_p99_us} us, max {compute_max_us} us "
                   "({ticks:.0f} ticks, {saturated_ticks:.0f} saturated, "
                   "{stale_state_events:.0f} stale-state events)")


# from its last /diagnostics before the stop (its log's last count goes on to the stop itself)
SIMULATOR_LINE = ("deadlines to t = {time:.1f} s of simulated time: {states:.0f} states, "
                  "{missed:.0f} missed, {deadlines_met_percent} % met; real-time factor "
                  "{real_time_factor}; {blowups:.0f} blow-ups, {command_timeouts:.0f} command "
                  "timeouts")


DEMO_LINE = ("sent {points:.0f} points over {duration_s:.1f} s ({interface}); goal result: "
             "{result}: {result_string}")


def status_line(diagnostics, node, line):
    """A node's last /diagnostics status, written out as `line` (a format of its keys)."""
    values = diagnostics.get(node)
    try:
        return line.format(**values) if values else f"{node}: no diagnostics received"
    except KeyError as missing:
        return f"{node}: {values.get('message')} (no {missing} yet)"
