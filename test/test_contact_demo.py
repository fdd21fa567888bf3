"""make demo MODE=contact end to end, in a module of its own: it starts rclpy itself, which
test_contact_loop's module fixture holds while its tests run."""

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness import demo  # noqa: E402  (a module that starts processes: marked so)


def test_make_demo_mode_contact(tmp_path, capsys, monkeypatch):
    """make demo MODE=contact end to end: the push on the moving arm estimated within 2 %
    (printed; r is a filter of J(q)^T w while q moves, 0.9 to 1.0 % seen; at rest the loop
    test holds 1 %), the goal ended by the collision, the reset taken, every process
    stopped with 0."""
    monkeypatch.setenv("ROS_DOMAIN_ID", "78")
    assert demo.main(["--mode", "contact", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    share = float(printed.split("N m: ")[1].split(" %")[0])
    assert share < 2.0, printed
    assert "goal ended PATH_TOLERANCE_VIOLATED: collision" in printed
    assert (tmp_path / "demo_contact.png").stat().st_size > 10000
