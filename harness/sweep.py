"""Every URDF of example-robot-data through make demo's path: which run, and why the others not.

    python -m harness.sweep [--duration 4] [--out out/sweep]      (make sweep)

For each URDF (and xacro) it asks check_arm, as `make demo ARM=...` does; an arm that passes
runs the closed loop (simulator, controller, trajectory goal over DDS, synchronous) for
`duration` s, and its row gives the worst joint's RMS tracking error and the goal's result. The
others get the one line make demo would print. Prints a markdown table; exit code 0.
"""

import argparse
import os
import pathlib
import sysconfig

from .demo import check_arm
from .loop import closed_loop
from .metrics import tracking_figures


def robots_dir():
    """example-robot-data's robots folder (installed by cmeel under site-packages)."""
    path = (pathlib.Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" /
            "example-robot-data" / "robots")
    if not path.is_dir():
        raise SystemExit("example-robot-data is not installed (pip install example-robot-data)")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--out", default="out/sweep")
    args = parser.parse_args(argv)
    root = robots_dir()
    domain = int(os.environ.get("ROS_DOMAIN_ID", 78))
    print("| URDF | runs | worst RMS error (rad) | goal / why not |\n|---|---|---|---|", flush=True)
    for path in sorted([*root.rglob("*.urdf"), *root.rglob("*.xacro")]):
        rel = path.relative_to(root)
        problem = check_arm(str(path))
        if problem:
            print(f"| {rel} | no | - | {problem} |", flush=True)
            continue
        log_dir = pathlib.Path(args.out) / str(rel).replace("/", "_")
        try:
            result = closed_loop(str(path), args.duration, None, log_dir, domain)
        except (RuntimeError, TimeoutError) as err:
            print(f"| {rel} | no | - | {str(err).splitlines()[0]} |", flush=True)
            continue
        rms = tracking_figures(result)[0].max()
        demo = result["diagnostics"].get("trajectory_demo", {})
        print(f"| {rel} | yes | {rms:.2e} | {demo.get('result', 'no result')} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
