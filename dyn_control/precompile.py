"""Compile every kernel the nodes run into numba's cache where the package is installed, so that
a node's first start does not compile them.

    python -m dyn_control.precompile [URDF]      (default: the package's default arm)

`make` runs it after `pip install -e .`, and `colcon build` from setup.py's install step. It
runs what the controller's start-up runs (core.warm_up: every mode, the limits, the observer)
and the simulator's first step on one arm; the kernels' types do not depend on the arm, so
every other arm finds them too. When it is done it marks the cache folder complete: a node
whose cache folder is not (a first start after a change of the source, or an install that
skipped this step) says once that it compiles, which on 2 idle cores takes about a minute and
a half, and several times that beside a load. Exit code 0, with the number of kernels that
were compiled and how long it took.
"""

import pathlib
import sys
import time

from dyn_control.kernels import cache

HERE = pathlib.Path(__file__).resolve().parent


def default_urdf():
    """The default arm's URDF: in the source tree, or in the package's share folder."""
    source = HERE.parent / "urdf" / "default_arm.urdf"
    if source.is_file():
        return source
    from ament_index_python.packages import get_package_share_directory
    return pathlib.Path(get_package_share_directory("dyn_control")) / "urdf" / "default_arm.urdf"


def compile_kernels(urdf):
    """Run once everything a node's start-up runs, on the arm of `urdf`."""
    import numpy as np

    from dyn_control import load_chain
    from dyn_control.controller.core import warm_up
    from dyn_control.controller.settings import controller_settings
    from dyn_control.parameters import CONTROLLER, SIMULATOR
    from dyn_control.sim.core import SimulatorCore, simulator_settings

    chain = load_chain(urdf)
    warm_up(controller_settings(chain, defaults(CONTROLLER, chain)))
    simulator = SimulatorCore(chain, simulator_settings(chain, defaults(SIMULATOR, chain)))
    simulator.sim.step(np.zeros(chain.n))


def defaults(table, chain):
    """The settings a node of `chain` reads from `table` with no parameter set."""
    return table.read(lambda name: table[name].default, chain.joint_names, None)


def compiled():
    """How many kernels of the loaded package this process compiled, not found in the cache."""
    count = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("dyn_control."):
            continue
        for value in vars(module).values():
            stats = getattr(value, "stats", None)
            if stats is not None and hasattr(stats, "cache_misses"):  # a numba dispatcher
                count += sum(stats.cache_misses.values())
            elif type(value).__name__ == "CFunc" and not value.cache_hits:
                count += 1  # compiled at its decoration, not loaded
    return count


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    urdf = pathlib.Path(args[0]) if args else default_urdf()
    begin = time.monotonic()
    compile_kernels(urdf)
    folder = cache.mark_complete()
    print(f"dyn_control: {compiled()} kernels compiled in {time.monotonic() - begin:.1f} s "
          f"into {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
