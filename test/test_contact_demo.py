"""make demo MODE=contact end to end, in a module of its own: it starts rclpy itself, which
test_contact_loop's module fixture holds while its tests run.
"""

import pathlib

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness import demo  # noqa: E402  (a module that starts processes: marked so)

ARMS = {"default_arm": ([], "78"),
        "ur5": (["--arm", "ur_description/urdf/ur5_robot.urdf"], "56"),
        "panda": (["--arm", "panda_description/urdf/panda.urdf", "--tip", "panda_hand"], "46")}


@pytest.mark.parametrize("name", ARMS)
def test_make_demo_mode_contact(name, tmp_path, capsys, monkeypatch):
    """make demo MODE=contact end to end on our arm and on two real arms' own files (the UR5,
    the Panda with its hand), whatever the load: a collision latched and the reset taken,
    every process stopped with 0 (the exit code), the plot written under the arm's name; and
    where the recording caught the push, its estimate on the moving arm within 3 % (r is a
    filter of J(q)^T w while q moves, so the share depends on where in the motion the push
    lands; the harness stamps the pushes from the trajectory's start as the controller reports
    it, so they land at the same point of the motion on every run: 0.90 % on the default arm,
    0.70 % and 0.71 % on the UR5; stamped from the latest state heard, the UR5's was 0.80 % to
    3.92 %; at rest test_contact_loop holds 1 %).
    """
    from conftest import robots_dir
    args, domain = ARMS[name]
    if args:
        args = [args[0], str(robots_dir() / args[1]), *args[2:]]
    monkeypatch.setenv("ROS_DOMAIN_ID", domain)
    assert demo.main(["--mode", "contact", "--out", str(tmp_path), *args]) == 0
    printed = capsys.readouterr().out
    assert "reset_collision after the push: True, cleared: collision" in printed, printed
    if "the recording missed" not in printed:  # a loaded machine's recorder can miss a phase
        share = float(printed.split("N m: ")[1].split(" %")[0])
        assert share < 3.0, printed
    arm = "default_arm" if not args else args[1].split("/")[-1].split(".")[0]
    assert (tmp_path / f"demo_{arm}_contact.png").stat().st_size > 10000
    assert list((tmp_path / "logs").iterdir())  # the run's logs, in a folder of their own
    if args:  # a real arm's bag: its /tf from the arm's own file, against our kinematics
        from bags import assert_tf_is_the_forward_kinematics

        from dyn_control import load_chain
        urdf = pathlib.Path(args[1])
        chain = load_chain(urdf, tip_link=args[3] if len(args) > 2 else None)
        bag, = tmp_path.glob(f"{arm}_contact_*")
        assert_tf_is_the_forward_kinematics(bag, urdf, chain)
