"""URDF text generators for tests and benchmarks: seed arms and random chains.

`planar_urdf` writes the planar arms of the seed lessons (rods or point masses, moving in the
vertical x-z plane, angles from the horizontal, positive lifts). `random_chain_urdf` writes a
chain of n joints of mixed types with everything the loader has to handle: arbitrary axes and
origins, rotated inertial frames, fixed links, side branches with their own movable joints and a
tool past the tip.
"""

import numpy as np


def _origin(xyz=(0, 0, 0), rpy=(0, 0, 0)):
    f = " ".join
    xyz, rpy = f(repr(float(v)) for v in xyz), f(repr(float(v)) for v in rpy)
    return f'<origin xyz="{xyz}" rpy="{rpy}"/>'


def inertial(mass, com=(0, 0, 0), inertia=((0, 0, 0), (0, 0, 0), (0, 0, 0)), rpy=(0, 0, 0)):
    """An <inertial> element: mass kg, com m, inertia (3, 3) kg m^2 about the COM in frame rpy."""
    i = np.asarray(inertia, dtype=float).tolist()
    return (f'<inertial>{_origin(com, rpy)}<mass value="{float(mass)!r}"/>'
            f'<inertia ixx="{i[0][0]!r}" ixy="{i[0][1]!r}" ixz="{i[0][2]!r}" '
            f'iyy="{i[1][1]!r}" iyz="{i[1][2]!r}" izz="{i[2][2]!r}"/></inertial>')


def joint(name, jtype, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1),
          limit=(-3.0, 3.0, 100.0, 5.0), extra=""):
    """A <joint>; limit = (lower, upper, effort, velocity)."""
    lo, up, effort, vel = (float(v) for v in limit)
    lim = "" if jtype in ("fixed", "floating", "planar") else (
        f'<limit lower="{lo!r}" upper="{up!r}" effort="{effort!r}" velocity="{vel!r}"/>')
    ax = "" if jtype == "fixed" else f'<axis xyz="{" ".join(repr(float(a)) for a in axis)}"/>'
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'{_origin(xyz, rpy)}{ax}{lim}{extra}</joint>')


def link(name, body=""):
    return f'<link name="{name}">{body}</link>'


def robot(name, *parts):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(parts) + "\n</robot>\n"


def planar_urdf(masses, lengths, coms=None, inertias=None):
    """Planar serial arm in the vertical x-z plane, joints about -y, links along x.

    coms: distance of each COM from its joint (default: at the link end, a point mass);
    inertias: moment of each link about its COM for rotation in the plane (default 0).
    """
    n = len(masses)
    coms = lengths if coms is None else coms
    inertias = [0.0] * n if inertias is None else inertias
    parts = [link("base_link")]
    for i in range(n):
        parent = "base_link" if i == 0 else f"link{i}"
        xyz = (0, 0, 0) if i == 0 else (lengths[i - 1], 0, 0)
        parts.append(joint(f"joint{i + 1}", "revolute", parent, f"link{i + 1}", xyz=xyz,
                           axis=(0, -1, 0)))
        inertia = np.diag([0.0, inertias[i], inertias[i]])
        parts.append(link(f"link{i + 1}", inertial(masses[i], (coms[i], 0, 0), inertia)))
    return robot("planar", *parts)


def random_inertia(rng, mass):
    """A physically valid inertia tensor (principal moments obey the triangle inequality)."""
    a, b = rng.uniform(0.02, 0.2, 2)
    moments = mass * np.array([a * a + b * b, a * a + 0.5 * b * b, 0.5 * a * a + b * b]) / 5
    rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return rot @ np.diag(moments) @ rot.T


def random_chain_urdf(n, seed=0, prismatic_every=4, extras=True):
    """A random serial chain of n joints (revolute, continuous, every k-th prismatic).

    With extras: a fixed child link on every body, a side branch with a revolute joint on every
    third body (taken at its zero position by the loader), and a tool past the tip.
    """
    rng = np.random.default_rng(seed)
    parts = [link("base_link")]
    parent = "base_link"
    for i in range(n):
        if prismatic_every and i % prismatic_every == prismatic_every - 1:
            jtype = "prismatic"
        else:
            jtype = "continuous" if i % 3 == 1 else "revolute"
        axis = rng.normal(size=3)
        name = f"link{i + 1}"
        parts.append(joint(f"joint{i + 1}", jtype, parent, name, xyz=rng.uniform(-0.2, 0.2, 3),
                           rpy=rng.uniform(-np.pi, np.pi, 3), axis=axis / np.linalg.norm(axis),
                           limit=(-2.5, 2.5, 50.0 + 10 * i, 3.0)))
        mass = rng.uniform(0.5, 3.0)
        parts.append(link(name, inertial(mass, rng.uniform(-0.1, 0.1, 3), random_inertia(rng, mass),
                                         rng.uniform(-np.pi, np.pi, 3))))
        if extras:
            m = rng.uniform(0.1, 0.5)
            parts.append(joint(f"fixed{i + 1}", "fixed", name, f"cover{i + 1}",
                               xyz=rng.uniform(-0.1, 0.1, 3), rpy=rng.uniform(-1, 1, 3)))
            parts.append(link(f"cover{i + 1}", inertial(m, rng.uniform(-0.05, 0.05, 3),
                                                        random_inertia(rng, m))))
            if i % 3 == 0 and i < n - 2:  # keeps link n the one deepest tip
                parts.append(joint(f"branch{i + 1}", "revolute", name, f"branch_link{i + 1}",
                                   xyz=rng.uniform(-0.1, 0.1, 3), axis=(0, 0, 1)))
                parts.append(link(f"branch_link{i + 1}", inertial(m, (0.05, 0, 0),
                                                                  random_inertia(rng, m))))
        parent = name
    if extras:
        parts.append(joint("tool_joint", "fixed", parent, "tool", xyz=(0, 0, 0.1), rpy=(0.3, 0, 0)))
        parts.append(link("tool", inertial(0.8, (0, 0.02, 0.05), random_inertia(rng, 0.8))))
    return robot(f"random_chain_{n}", *parts)


def random_tree_urdf(seed=0, trunk=2, branches=(3, 4, 2)):
    """A random tree: a trunk of `trunk` joints, then one branch per entry of `branches` (that
    many joints each) off the trunk's last link, the first branch forking again half way. Every
    link has a fixed child with its own inertia, every branch ends in a tool
    (`tool<b>`, b = 1, 2, ...), and a revolute side joint hangs off the trunk. Tips: the tools.
    """
    rng = np.random.default_rng(seed)
    parts = [link("base_link")]

    def body(name, parent, jname, jtype):
        axis = rng.normal(size=3)
        parts.append(joint(jname, jtype, parent, name, xyz=rng.uniform(-0.2, 0.2, 3),
                           rpy=rng.uniform(-np.pi, np.pi, 3), axis=axis / np.linalg.norm(axis),
                           limit=(-2.5, 2.5, 80.0, 3.0)))
        mass = rng.uniform(0.5, 3.0)
        parts.append(link(name, inertial(mass, rng.uniform(-0.1, 0.1, 3), random_inertia(rng, mass),
                                         rng.uniform(-np.pi, np.pi, 3))))
        parts.append(joint(f"{name}_cover_joint", "fixed", name, f"{name}_cover",
                           xyz=rng.uniform(-0.1, 0.1, 3), rpy=rng.uniform(-1, 1, 3)))
        parts.append(link(f"{name}_cover", inertial(0.2, rng.uniform(-0.05, 0.05, 3),
                                                    random_inertia(rng, 0.2))))
        return name

    parent = "base_link"
    for i in range(trunk):
        parent = body(f"trunk{i + 1}", parent, f"trunk_joint{i + 1}",
                      "prismatic" if i == 0 else "revolute")
    parts.append(joint("side_joint", "revolute", parent, "side_link", axis=(0, 0, 1)))
    parts.append(link("side_link", inertial(0.4, (0.05, 0, 0), random_inertia(rng, 0.4))))
    tool, fork = 0, None
    for b, count in enumerate(branches):
        at = parent if fork is None or b != 1 else fork
        for k in range(count):
            at = body(f"b{b + 1}_link{k + 1}", at, f"b{b + 1}_joint{k + 1}",
                      "continuous" if k % 3 == 2 else "revolute")
            if b == 0 and k == count // 2 - 1:
                fork = at  # the second branch starts here, inside the first
        tool += 1
        parts.append(joint(f"tool_joint{tool}", "fixed", at, f"tool{tool}",
                           xyz=(0, 0, 0.1), rpy=(0.3, 0, 0)))
        parts.append(link(f"tool{tool}", inertial(0.6, (0, 0.02, 0.05), random_inertia(rng, 0.6))))
    return robot(f"random_tree_{seed}", *parts)
