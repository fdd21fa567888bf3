"""Print the chain or tree dyn_control builds from a URDF, and what is wrong with the URDF.

    python -m dyn_control.describe ARM.urdf [--root LINK] [--tip LINK[,LINK...]] [--joints
    J1,J2,...]

The table shows, per controlled joint in body order: its parent joint (the tree's shape), type,
unit axis (joint frame), the mass lumped into its body with the links that went into it, the
body's centre of mass (body frame) and the limits.
Joints lumped into a body at their zero position (a gripper's fingers below the arm's tip)
are listed. Invalid inertia, joints that move no mass and joints whose limits are missing,
zero, swapped or not finite are listed as findings instead of stopping the load, and the exit
code is then 1: the nodes refuse such a URDF. Warnings (a
damping stiff at the step, a zero pose the effort limits cannot hold against gravity) leave
the exit code 0: the nodes run such an arm. When no chain can be built, exit code 1 and one
line on stderr; when no single chain is chosen (two arms), the whole tree first, each branch's
joints, to choose --tip or --joints from.
"""

import argparse
import sys
import warnings

import numpy as np

from dyn_control.model.chain import UNLIMITED_HINT, AmbiguousTip, URDFError, load_chain
from dyn_control.parameters import DEFAULT_DT
from dyn_control.poses import default_initial_positions, gravity_overloads, zero_pose
from dyn_control.sim.simulation import stiff_joints


def _num(x):
    return "-" if not np.isfinite(x) else f"{x:.4g}"


def format_chain(chain, dt=DEFAULT_DT) -> str:
    """The chain as a text table, followed by the validity findings and the joints whose
    damping is stiff at the simulation step dt (s).
    """
    head = ("joint", "parent", "type", "axis", "mass kg", "COM m (body frame)", "lower", "upper",
            "effort", "velocity")
    rows = []
    for j, m, c, up in zip(chain.joints, chain.mass, chain.com, chain.parent):
        parent = chain.joints[up].name if up >= 0 else "(base)"
        rows.append((j.name, parent, j.type, " ".join(f"{a:+.3f}" for a in j.axis), f"{m:.4g}",
                     " ".join(f"{v:+.4f}" for v in c), _num(j.lower), _num(j.upper),
                     _num(j.effort), _num(j.velocity)))
    widths = [max(len(str(r[k])) for r in [head, *rows]) for k in range(len(head))]
    line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    shape = "chain" if len(chain.tip_links) == 1 else "tree"
    out = [f"{shape}: {chain.root_link} -> {', '.join(chain.tip_links)}, {chain.n} joints, "
           f"total mass {chain.mass.sum():.4g} kg, gravity (base frame) "
           f"{np.round(chain.gravity, 4).tolist()} m/s^2", "", line(head),
           line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    out += ["", "lumped links:"]
    out += [f"  {j.name}: {', '.join(links)}" for j, links in zip(chain.joints, chain.lumped_links)]
    if chain.locked_joints:
        out += ["", "locked at their zero position and lumped: " + ", ".join(chain.locked_joints)]
    damped = [j for j in chain.joints if j.damping or j.friction]
    if damped:
        out += ["", "joint dynamics:"]
        out += [f"  {j.name}: damping {j.damping:g}, friction {j.friction:g}" for j in damped]
    warnings_ = []
    if not chain.findings:  # (with invalid inertia the figures below mean nothing)
        overloads = gravity_overloads(chain, zero_pose(chain))
        warnings_ += overloads
        if overloads:
            warnings_.append("dynamics_simulator starts such an arm where it can be held: "
                             f"{np.round(default_initial_positions(chain), 3).tolist()}")
        for i, inertia, tau_c in stiff_joints(chain, default_initial_positions(chain), dt):
            j = chain.joints[i]
            warnings_.append(
                f"joint '{j.name}': damping {j.damping:g} on an effective inertia of "
                f"{inertia:.3g} settles in {tau_c:.3g} s, shorter than the step {dt:g} s (stiff: "
                "needs implicit damping, as dynamics_simulator does, and no feedback of "
                "measured velocity)")
    findings = [*chain.findings, *(line for _, line in chain.limit_findings)]
    out += ["", "findings:" if findings else "findings: none"]
    out += [f"  {f}" for f in findings]
    if chain.limit_findings:
        out += [f"  (the nodes refuse such joints; {UNLIMITED_HINT})"]
    if warnings_:
        out += ["", "warnings (the nodes run it):"]
        out += [f"  {w}" for w in warnings_]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dyn_control.describe",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("urdf", help="URDF or .xacro file")
    parser.add_argument("--root", help="root link of the chain (default: URDF root)")
    parser.add_argument("--tip", help="tip link, or comma-separated tips of a tree (default: end "
                        "of the longest movable path, or with --joints the ends of theirs)")
    parser.add_argument("--joints", help="comma-separated controlled joints")
    parser.add_argument("--dt", type=float, default=DEFAULT_DT,
                        help=f"simulation step for the stiffness finding, s (default {DEFAULT_DT})")
    args = parser.parse_args(argv)
    joints = args.joints.split(",") if args.joints else None
    tips = args.tip.split(",") if args.tip else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the findings are printed in the table
            chain = load_chain(args.urdf, root_link=args.root, tip_links=tips, joints=joints,
                               strict=False)
    except AmbiguousTip as err:
        print(err.outline)
        print(f"error: {err.choose_with('choose with --tip LINK or --joints J1,J2,...')}",
              file=sys.stderr)
        return 1
    except URDFError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(format_chain(chain, args.dt))
    return 1 if chain.findings or chain.limit_findings else 0


if __name__ == "__main__":
    sys.exit(main())
