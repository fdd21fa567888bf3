"""The demo's plots (PNG files, no display): the joint loop, and the Cartesian demo."""

import contextlib
import math

import numpy as np


@contextlib.contextmanager


def figure(path, title, rows, size):
    """The axes of `rows` panels over one time axis, saved to `path` (PNG) on leaving."""
    import matplotlib
    matplotlib.use("Agg")  # files only: the demo runs without a display
    import matplotlib.pyplot as plt

    # constrained layout makes room for legends outside the axes and keeps the panels one width
    fig, axes = plt.subplots(rows, 1, figsize=size, sharex=True, layout="constrained")
    yield axes
    fig.suptitle(title)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def legend_outside(ax, **kwargs):
    """A legend right of the axes, where it covers no curve."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, **kwargs)


def joint_colors(n):
    """n distinct colours: tab10 up to 10, tab20 up to 20, else evenly along a continuous map."""
    import matplotlib
    if n <= 10:
        return [matplotlib.colormaps["tab10"](j) for j in range(n)]
    if n <= 20:
        # tab20's dark shades first, then the light ones: neighbours do not share a hue
        order = [*range(0, 20, 2), *range(1, 20, 2)]
        return [matplotlib.colormaps["tab20"](order[j]) for j in range(n)]
    return list(matplotlib.colormaps["turbo"](np.linspace(0.05, 0.95, n)))


def plot_cartesian(result, figures, path):
    t, p, _ = result["pose"]
    tt, pt, _ = result["target"]
    ts, _, effort = result["states"]
    phases = result["phases"]
    t0 = phases["circle"]
    centre = p[(t >= t0 - 0.5) & (t < t0)].mean(axis=0)
    # before the first target recorded the errors compare with a later target: not drawn
    known = t >= tt.min() if tt.size else np.zeros(len(t), dtype=bool)
    n = effort.shape[1] if effort.size else 0
    names = result.get("joint_names") or [f"joint {j + 1}" for j in range(n)]
    title = "dyn_control cartesian_impedance: circle of targets, then a push"
    with figure(path, title, 4, (11, 12)) as axes:
        for j, axis in enumerate("xyz"):
            axes[0].plot(tt - t0, 1e3 * (pt[:, j] - centre[j]), "--", color=f"C{j}", lw=1)
            axes[0].plot(t - t0, 1e3 * (p[:, j] - centre[j]), color=f"C{j}", lw=1, label=axis)
        axes[0].set_ylabel("end effector from the start (mm)\nsolid actual, dashed target")
        legend_outside(axes[0])
        axes[1].plot(t[known] - t0, 1e3 * figures["error"][known], label="position error (mm)")
        axes[1].plot(t[known] - t0, 1e3 * figures["rotation"][known],
                     label="orientation error (mrad)")
        legend_outside(axes[1])
        before = (t >= phases["push"] - 0.5) & (t < phases["push"])
        start = p[before].mean(axis=0)
        for j, axis in enumerate("xyz"):
            axes[2].plot(t - t0, 1e3 * (p[:, j] - start[j]), color=f"C{j}", lw=1,
                         label=f"{axis} displacement")
            axes[2].axhline(1e3 * figures["push_expected_m"][j], color=f"C{j}", ls=":", lw=1)
        axes[2].axvspan(phases["push"] - t0, phases["push_end"] - t0, color="0.9")
        axes[2].set_ylabel("displacement (mm)\ndotted F/K, shaded: the push")
        axes[2].set_xlim(left=-0.5)
        legend_outside(axes[2])
        for j, color in enumerate(joint_colors(n)):
            axes[3].plot(ts - t0, effort[:, j], color=color, lw=1, label=names[j])
        if n:
            legend_outside(axes[3])
        # the teeth are in the data: each 50 Hz target steps the spring force by K dx
        axes[3].set_ylabel("torque (N m)\nteeth: the 50 Hz target steps")
        axes[3].set_xlabel("time since the circle's start (s)")


def plot(result, path, prismatic=()):
    """The joint loop's plot; prismatic: the names of the joints in m and N (the others are in
    rad and N m), whose forces get a panel of their own.
    """
    t, names = result["t"], result["joint_names"]
    linear = [j for j, name in enumerate(names) if name in set(prismatic)]
    rotary = [j for j in range(len(names)) if j not in linear]
    colors = joint_colors(len(names))
    title = "dyn_control closed loop: simulator + computed-torque controller"
    rows = 4 if linear else 3
    with figure(path, title, rows, (11, 12 if linear else 10)) as axes:
        for j, (name, color) in enumerate(zip(names, colors)):
            label = f"{name} (m, N)" if j in linear else name
            axes[0].plot(t, result["reference"][:, j], "--", color=color, lw=1)
            axes[0].plot(t, result["position"][:, j], color=color, lw=1, label=label)
            axes[1].plot(t, 1e3 * result["error"][:, j], color=color, lw=1)
            axes[3 if j in linear else 2].plot(t, result["effort"][:, j], color=color, lw=1)
        # one legend for every panel (a joint's colour is the same in each), beside them all,
        # in as many columns as the figure's height needs (about 50 entries a column)
        fig = axes[0].figure
        fig.legend(loc="outside right upper", fontsize=8, ncol=math.ceil(len(names) / 50))
        units = " (rad, m)" if linear else " (rad)"
        axes[0].set_ylabel(f"position{units}\nsolid actual, dashed desired")
        axes[1].set_ylabel("error (mrad, mm)" if linear else "error (mrad)")
        axes[2].set_ylabel("torque (N m)" if rotary else "")
        if linear:
            axes[3].set_ylabel("prismatic joints'\nforce (N)")
        axes[-1].set_xlabel("time since trajectory start (s)")
