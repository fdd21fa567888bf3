"""Upgrading in place never runs stale compiled code (dyn_control.kernels.cache).

numba's own cache checks only the stamp of the file a kernel is written in, so a cached kernel
that calls a kernel of another file kept the old callee after that file changed. Reference: the
edited source itself. In a copy of the package, a kernel of kernels/so3.py is called from a
kernel of controller/laws.py; each run is a fresh process, as after `git pull`. The second run must
load both from the cache (else the test proves nothing), and after an edit of kernels/so3.py alone
the caller must return what the edited callee says.
"""

import json
import os
import shutil
import subprocess
import sys

from conftest import PACKAGE_DIR

CALLEE = """

@jit
def _cache_probe():
    return 1.0
"""
CALLER = """
from dyn_control.kernels import so3 as _probe_module


@jit
def _cache_probe_caller():
    return _probe_module._cache_probe() + 0.0
"""
RUN = """
import json
from dyn_control.controller import laws as control
value = control._cache_probe_caller()
print(json.dumps({"value": value, "hits":
sum(control._cache_probe_caller.stats.cache_hits.values())}))
"""


def _run(root):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the package's own
    env["PYTHONPATH"] = str(root)
    out = subprocess.run([sys.executable, "-c", RUN], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_kernel_edited_in_another_file_is_recompiled_for_its_caller(tmp_path):
    package = tmp_path / "dyn_control"
    shutil.copytree(PACKAGE_DIR / "dyn_control", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(package / "kernels" / "so3.py", "a") as f:
        f.write(CALLEE)
    with open(package / "controller" / "laws.py", "a") as f:
        f.write(CALLER)
    first, cached = _run(tmp_path), _run(tmp_path)
    assert first == {"value": 1.0, "hits": 0}
    assert cached == {"value": 1.0, "hits": 1}  # the caller came from the cache
    callee = package / "kernels" / "so3.py"
    callee.write_text(callee.read_text().replace("return 1.0", "return 2.0"))
    edited = _run(tmp_path)
    assert edited["value"] == 2.0, edited  # not the cached caller's inlined 1.0
    folders = sorted(p.name for p in (package / "__pycache__").glob("dyn_control-kernels-*"))
    assert len(folders) == 1, folders  # the old source's folder went
