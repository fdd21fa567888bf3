"""The demo's plots (PNG files, no display): the joint loop, and the Cartesian demo."""

import contextlib


@contextlib.contextmanager


def figure(path, title, rows, size):
    """The axes of `rows` panels over one time axis, saved to `path` (PNG) on leaving."""
    import matplotlib
    matplotlib.use("Agg")  # files only: the demo runs without a display
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, figsize=size, sharex=True)
    yield axes
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_cartesian(result, figures, path):
    t, p, _ = result["pose"]
    tt, pt, _ = result["target"]
    ts, _, effort = result["states"]
    phases = result["phases"]
    t0 = phases["circle"]
    centre = p[(t >= t0 - 0.5) & (t < t0)].mean(axis=0)
    title = "dyn_control cartesian_impedance: circle of targets, then a push"
    with figure(path, title, 4, (11, 12)) as axes:
        for j, axis in enumerate("xyz"):
            axes[0].plot(tt - t0, 1e3 * (pt[:, j] - centre[j]), "--", color=f"C{j}", lw=1)
            axes[0].plot(t - t0, 1e3 * (p[:, j] - centre[j]), color=f"C{j}", lw=1, label=axis)
        axes[0].set_ylabel("end effector from the start (mm)\nsolid actual, dashed target")
        axes[0].legend(ncol=3, fontsize=8, loc="upper right")
        axes[1].plot(t - t0, 1e3 * figures["error"], label="position error (mm)")
        axes[1].plot(t - t0, 1e3 * figures["rotation"], label="orientation error (mrad)")
        axes[1].legend(fontsize=8, loc="upper right")
        before = (t >= phases["push"] - 0.5) & (t < phases["push"])
        start = p[before].mean(axis=0)
        for j, axis in enumerate("xyz"):
            axes[2].plot(t - t0, 1e3 * (p[:, j] - start[j]), color=f"C{j}", lw=1,
                         label=f"{axis} displacement")
            axes[2].axhline(1e3 * figures["push_expected_m"][j], color=f"C{j}", ls=":", lw=1)
        axes[2].axvspan(phases["push"] - t0, phases["push_end"] - t0, color="0.9")
        axes[2].set_ylabel("displacement (mm)\ndotted F/K, shaded: the push")
        axes[2].set_xlim(left=-0.5)
        axes[2].legend(fontsize=8, loc="upper right")
        for j in range(effort.shape[1] if effort.size else 0):
            axes[3].plot(ts - t0, effort[:, j], lw=1)
        axes[3].set_ylabel("torque (N m)")
        axes[3].set_xlabel("time since the circle's start (s)")


def plot(result, path):
    t, names = result["t"], result["joint_names"]
    title = "dyn_control closed loop: simulator + computed-torque controller"
    with figure(path, title, 3, (11, 10)) as axes:
        for j, name in enumerate(names):
            color = f"C{j}"
            axes[0].plot(t, result["reference"][:, j], "--", color=color, lw=1)
            axes[0].plot(t, result["position"][:, j], color=color, lw=1, label=name)
            axes[1].plot(t, 1e3 * result["error"][:, j], color=color, lw=1)
            axes[2].plot(t, result["effort"][:, j], color=color, lw=1)
        axes[0].set_ylabel("position (rad)\nsolid actual, dashed desired")
        axes[0].legend(ncol=len(names), fontsize=8, loc="upper right")
        axes[1].set_ylabel("error (mrad)")
        axes[2].set_ylabel("torque (N m)")
        axes[2].set_xlabel("time since trajectory start (s)")
