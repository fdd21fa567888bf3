"""Every Python code block of README.md and docs/*.md runs as written (from the package's
folder, blocks of one page in one namespace, in order), so an example can never name a link,
a function or an argument that does not exist.
"""

import re

import pytest
from conftest import PACKAGE_DIR

PAGES = [PACKAGE_DIR / "README.md", *sorted((PACKAGE_DIR / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _blocks(page):
    return BLOCK.findall(page.read_text())


def test_the_pages_have_python_examples():
    assert sum(len(_blocks(page)) for page in PAGES) >= 2


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs(page, monkeypatch):
    monkeypatch.chdir(PACKAGE_DIR)
    namespace = {}
    for k, block in enumerate(_blocks(page)):
        exec(compile(block, f"{page.name} block {k + 1}", "exec"), namespace)  # noqa: S102
