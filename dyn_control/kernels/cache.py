"""Where numba keeps the compiled kernels: a folder keyed to the package's own source.

numba's on-disk cache checks only the stamp (modification time and size) of the file a kernel
is written in. A kernel that calls one in another file keeps its cached machine code when only
the callee changes, so after `git pull` or an upgrade in place it can run the old callee, or
crash on a layout that changed ("NRT_adapt_ndarray_to_python 'descr' is NULL" was seen). Keying
the folder to a hash of every source file of the library means that changed code never meets
a cache compiled from other code: a new folder fills, and the folders of other versions go.

The folder is `<key>` under NUMBA_CACHE_DIR when the user set one, else under the package's
`__pycache__` (or the user's cache folder where the package cannot be written, as in a
read-only install). Called once, before the first kernel is decorated.
"""

import hashlib
import os
import pathlib
import shutil

PACKAGE = pathlib.Path(__file__).resolve().parents[1]  # dyn_control/, whose every source counts
PREFIX = "dyn_control-kernels-"


def source_key(package=PACKAGE):
    """A hash of the library's source files (the kernels and every module they import)."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _writable(folder):
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def folder():
    """This source's cache folder (None without numba): under NUMBA_CACHE_DIR when the user
    set one, else the package's __pycache__, else the user's cache folder.
    """
    try:
        from numba import config
    except ImportError:
        return None
    if config.CACHE_DIR and not pathlib.Path(config.CACHE_DIR).name.startswith(PREFIX):
        base = pathlib.Path(config.CACHE_DIR)
    elif config.CACHE_DIR:  # configured already: this folder
        return pathlib.Path(config.CACHE_DIR)
    else:
        base = PACKAGE / "__pycache__"
        if not _writable(base):
            xdg = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
            base = pathlib.Path(xdg) / "dyn_control"
    return base / (PREFIX + source_key())


def configure():
    """Point numba's cache at this source's folder, and remove the folders of other sources
    next to it. Returns the folder (None without numba).
    """
    here = folder()
    if here is None:
        return None
    from numba import config
    for stale in here.parent.glob(PREFIX + "*"):
        if stale != here:  # another version's: nothing of this source can use it
            shutil.rmtree(stale, ignore_errors=True)
    config.CACHE_DIR = str(here)
    return here


COMPLETE = "complete"  # the marker dyn_control.precompile leaves in a folder it filled


def complete():
    """Whether dyn_control.precompile filled this source's folder (no numba: nothing to do)."""
    here = folder()
    return here is None or (here / COMPLETE).is_file()


def mark_complete():
    """Mark this source's folder filled (dyn_control.precompile, once it ran) -> the folder."""
    here = configure()
    if here is not None:
        here.mkdir(parents=True, exist_ok=True)
        (here / COMPLETE).write_text("every kernel of the nodes' start-up is in this folder\n")
    return here
