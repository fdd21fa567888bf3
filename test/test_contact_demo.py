"""make demo MODE=contact end to end, in a module of its own: it starts rclpy itself, which
test_contact_loop's module fixture holds while its tests run.
"""

import json
import pathlib

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness import demo  # noqa: E402  (a module that starts processes: marked so)

ARMS = {"default_arm": ([], "78"),
        "ur5": (["--arm", "ur_description/urdf/ur5_robot.urdf"], "56"),
        "panda": (["--arm", "panda_description/urdf/panda.urdf", "--tip", "panda_hand"], "46")}


@pytest.mark.parametrize("name", ARMS)
def test_make_demo_mode_contact(name, tmp_path, monkeypatch):
    """make demo MODE=contact end to end on our arm and on two real arms' own files (the UR5,
    the Panda with its hand), whatever the load, read from the run's JSON report: a collision
    latched and the reset taken (its answer, or /diagnostics), every process stopped with 0
    (the exit code), the plot written under the arm's name; and where the recording caught the
    push, the estimate against its reference, the simulator's true joint torques through the
    observer's first-order filter, within 1 % of the largest (0.17 % on the UR5 in a loaded suite).

    The force share on the moving arm (r filters J(q)^T w over the last 1/K_O s of q) depends on
    where in the motion the push lands, which the load moves: 0.70 % on the UR5 quiet, 3.17 %
    and 3.26 % in loaded suites, the gap above 0.17 % in the same run. It is held to 10 % only,
    as the estimate's direction and size (at rest test_contact_loop holds 1 %).
    """
    from conftest import robots_dir
    args, domain = ARMS[name]
    if args:
        args = [args[0], str(robots_dir() / args[1]), *args[2:]]
    monkeypatch.setenv("ROS_DOMAIN_ID", domain)
    assert demo.main(["--mode", "contact", "--out", str(tmp_path), *args]) == 0
    arm = "default_arm" if not args else args[1].split("/")[-1].split(".")[0]
    report = json.loads((tmp_path / f"demo_{arm}_contact.json").read_text())
    # the reset taken: its answer says it cleared a collision, or, where no answer came (beside
    # busy-machine.sh the controller took the reset and no answer came in 30 s), the
    # controller's /diagnostics after the call says so, with a collision counted
    if report["reset"] is not None:
        assert report["reset"][0] is True and report["reset"][1].startswith("cleared: collision")
    else:
        assert report["reset_cleared"] and report["collisions"] >= 1, report
    assert set(report["exit_codes"].values()) == {0}, report
    if "missed" not in report:  # a loaded machine's recorder can miss a phase
        assert report["filtered_truth_gap_percent"] < 1.0, report
        assert report["push_share_percent"] < 10.0, report
    assert (tmp_path / f"demo_{arm}_contact.png").stat().st_size > 10000
    assert list((tmp_path / "logs").iterdir())  # the run's logs, in a folder of their own
    if args:  # a real arm's bag: its /tf from the arm's own file, against our kinematics
        from bags import assert_tf_is_the_forward_kinematics

        from dyn_control import load_chain
        urdf = pathlib.Path(args[1])
        chain = load_chain(urdf, tip_link=args[3] if len(args) > 2 else None)
        bag, = tmp_path.glob(f"{arm}_contact_*")
        assert_tf_is_the_forward_kinematics(bag, urdf, chain)
