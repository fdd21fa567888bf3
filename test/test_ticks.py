"""A tick's one compiled call entered from C (controller.ticks) against the same call through
numba's dispatcher, bit for bit: every arm of example-robot-data, each mode, with and without a
last command, the soft start and the walls; and what the C entry does not take.
"""

import numpy as np
import pytest
from arm_sweep import bent_pose, load_arm, real_arms
from conftest import URDF_DIR, read_table

from dyn_control import load_chain
from dyn_control.controller import ticks
from dyn_control.controller.cartesian import CartesianLaw
from dyn_control.controller.guard import Guard
from dyn_control.controller.laws import ControlLaw, TeachLaw
from dyn_control.controller.settings import controller_settings
from dyn_control.kinematics import frame_pose
from dyn_control.parameters import CONTROLLER

pytestmark = pytest.mark.skipif(ticks._calls is None, reason="the C module is not built")


class Said:
    def __call__(self, *line, **kwargs):
        pass


def setup(chain, **overrides):
    s = controller_settings(chain, read_table(CONTROLLER, chain, **overrides))
    guard = Guard(Said())
    guard.configure(s.model, s.guard, s.limits, 1e-3, s.cartesian.ee_link,
                    np.full(chain.n, 50.0))
    return s, guard


def same(a, b):
    """Two ticks' results equal bit for bit (arrays by their bytes: NaN and -0 count)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        elif isinstance(x, tuple):
            same(x, y)
        else:
            assert x == y and type(x) is type(y)


def dispatched(kind, law, args, stage, share, walls, previous, since):
    """The same tick through numba's dispatcher (what runs without the C module)."""
    if kind == "joint":
        q, qd, desired, dt = args
        e, ed, found = ticks._joint_tick(*law._args, q, qd, *desired, law.integral, dt,
                                         *stage.args, share, walls, previous, since)
        return (e, ed, *found)
    if kind == "cartesian":
        q, qd, R_d, p_d, w, q_n = args
        e, found = ticks._cartesian_tick(*law._args[:6], law._args[6:], q, qd,
                                         *law.targets(R_d, p_d, w), q_n, *stage.args, share,
                                         walls, previous, since)
        return (e, *found)
    q, qd = args
    return ticks._teach_tick(*law._args, q, qd, *stage.args, share, walls, previous, since)


def entered(kind, law, args, limits):
    call = {"joint": ticks.joint_tick, "cartesian": ticks.cartesian_tick,
            "teach": ticks.teach_tick}[kind]
    got = call(law, *args, limits)
    return (got[0], got[1], *got[2]) if kind == "joint" else (
        (got[0], *got[1]) if kind == "cartesian" else got)


def check_arm(chain, seed=0):
    rng = np.random.default_rng(seed)
    n = chain.n
    limited = np.isfinite(chain.position_min) & np.isfinite(chain.position_max)
    box = {"limits.workspace_min": [-0.3, -0.3, -0.2], "limits.workspace_max": [0.3, 0.3, 2.0]}
    s, guard = setup(chain, **box)
    # near the upper limits where there are some (the barriers act), moving
    q = np.where(limited, chain.position_max - 0.02, bent_pose(chain))
    for qd in (rng.uniform(-0.5, 0.5, n), np.full(n, 20.0)):  # 20 rad/s: a velocity fault
        check_state(chain, s, guard, q, qd, rng)


def check_state(chain, s, guard, q, qd, rng):
    n = chain.n
    R, p = frame_pose(chain, bent_pose(chain), s.cartesian.ee_link[0])
    laws = {"joint": ControlLaw(s.model, **vars(s.joint), limits=s.limits),
            "cartesian": CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits),
            "teach": TeachLaw(s.model, s.teach_damping, s.limits)}
    inputs = {"joint": (q, qd, (bent_pose(chain), np.zeros(n), rng.normal(size=n)), 1e-3),
              "cartesian": (q, qd, R, p + 0.05, rng.normal(size=6), bent_pose(chain)),
              "teach": (q, qd)}
    faults = set()
    for kind, law in laws.items():
        twin = {"joint": lambda: ControlLaw(s.model, **vars(s.joint), limits=s.limits),
                "cartesian": lambda: CartesianLaw(s.model, **vars(s.cartesian),
                                                  limits=s.limits),
                "teach": lambda: TeachLaw(s.model, s.teach_damping, s.limits)}[kind]()
        for previous in (None, rng.normal(size=n)):
            for share, walls in ((1.0, True), (0.4, False)):
                limits = (guard.stage, share, walls, previous, 2e-3)
                # the laws keep state (the integral, the eigenvectors): each path its own law,
                # run twice, the second from the first's state
                for _ in range(2):
                    c = entered(kind, law, inputs[kind], limits)
                    d = dispatched(kind, twin, inputs[kind], *limits)
                    same(c, d)
                    faults.add(c[-2])
        assert law.__dict__["_tick"][1] is not None  # the C entry ran, not the fallback
    assert (faults == {-1}) == bool((np.abs(qd) <= guard.velocity_limit).all())


def test_the_c_entry_equals_the_dispatcher_on_the_default_arm():
    check_arm(load_chain(URDF_DIR / "default_arm.urdf"))


@pytest.mark.parametrize("rel, keywords", real_arms(), ids=lambda x: str(x).split("/")[-1])
def test_the_c_entry_equals_the_dispatcher_on_every_real_arm(rel, keywords):
    chain = load_arm(rel) if not keywords else load_chain(
        __import__("conftest").robots_dir() / rel, **keywords)
    check_arm(chain, seed=len(rel))


def test_two_hands_and_a_new_stage_bind_again():
    # a Cartesian law over two frames (6 f rows), and a configure's new stage: bound again
    chain = load_chain(URDF_DIR / "default_arm.urdf")
    s, guard = setup(chain)
    law, twin = (CartesianLaw(s.model, ee_link=["link7", "link5"], limits=s.limits)
                 for _ in range(2))
    q, qd = bent_pose(chain), np.full(chain.n, 0.1)
    poses = [frame_pose(chain, q, link) for link in law.ee_links]
    R_d, p_d = np.array([R for R, _ in poses]), np.array([p for _, p in poses]) + 0.02
    args = (q, qd, R_d, p_d, np.zeros(12), q)
    limits = (guard.stage, 1.0, True, None, 0.0)
    same(entered("cartesian", law, args, limits), dispatched("cartesian", twin, args, *limits))
    first = law._tick[1]
    guard.configure(s.model, s.guard, s.limits, 1e-3, s.cartesian.ee_link,
                    np.full(chain.n, 50.0))
    limits = (guard.stage, 1.0, True, None, 0.0)
    same(entered("cartesian", law, args, limits), dispatched("cartesian", twin, args, *limits))
    assert law._tick[1] is not first and law._tick[0] is guard.stage


def test_what_the_c_entry_cannot_take_goes_through_the_dispatcher():
    # a list, float32 or a strided view: converted as the dispatcher's path converts them,
    # the same command; a wrong size: the dispatcher's path names it
    chain = load_chain(URDF_DIR / "default_arm.urdf")
    s, guard = setup(chain)
    law, twin = (TeachLaw(s.model, s.teach_damping, s.limits) for _ in range(2))
    q = bent_pose(chain).astype(np.float32).astype(np.float64)  # float32 holds it exactly
    qd = np.linspace(-0.3, 0.3, chain.n)
    limits = (guard.stage, 1.0, False, None, 0.0)
    expected = ticks.teach_tick(twin, q, qd, limits)
    for q_in in (list(q), q.astype(np.float32), np.repeat(q, 2)[::2]):
        same(ticks.teach_tick(law, q_in, qd, limits), expected)
    with pytest.raises(ValueError, match="q"):
        ticks.teach_tick(law, q[:-1], qd, limits)


def test_a_cartesian_tick_allocates_only_what_it_returns():
    # numba's allocator counts (its runtime's statistics): the law fills its workspace and
    # finish bounds the rate into the command, so a tick, past the soft start, allocates what
    # outlives it: the pose error and the command (53 arrays before the workspace)
    from numba.core.runtime import _nrt_python as nrt

    chain = load_chain(URDF_DIR / "default_arm.urdf")
    s, guard = setup(chain)
    law = CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits)
    q, qd = bent_pose(chain), np.full(chain.n, 0.1)
    R, p = frame_pose(chain, q, law.ee_link)
    limits = (guard.stage, 1.0, True, np.zeros(chain.n), 1e-3)
    ticks.cartesian_tick(law, q, qd, R, p + 0.01, np.zeros(6), q, limits)
    was = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    try:
        before = nrt.memsys_get_stats_alloc()
        ticks.cartesian_tick(law, q, qd, R, p + 0.01, np.zeros(6), q, limits)
        allocated = nrt.memsys_get_stats_alloc() - before
    finally:
        if not was:
            nrt.memsys_disable_stats()
    assert law._tick[1] is not None and allocated == 2
