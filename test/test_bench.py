"""The dynamics benchmark runs and writes its JSON (no timing is asserted: figures vary by
machine; `make bench` prints them and checks the targets)."""

import json
import subprocess
import sys

from conftest import PACKAGE_DIR, require


def test_bench_quick_run_writes_table_and_json(tmp_path):
    require("pinocchio")
    out = tmp_path / "bench.json"
    res = subprocess.run([sys.executable, str(PACKAGE_DIR / "bench" / "bench_dynamics.py"),
                          "--quick", "--json", str(out)], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    assert "targets:" in res.stdout and "start-up" in res.stdout
    data = json.loads(out.read_text())
    panda = next(r for r in data["rows"] if r["arm"] == "panda")
    assert panda["n"] == 7 and set(panda["ratio"]) == {
        "inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"}
    assert all(v > 0 for v in panda["pinocchio_us"].values())
