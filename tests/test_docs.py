"""Every ```python block of every docs/*.md page runs: blocks of one page in order, in one
namespace, on the CPU. ```text blocks are not run. The generated policy table is up to date."""

import importlib.util
import pathlib
import re
import warnings

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(DOCS.glob("*.md"))
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list:
    """(line number, code) of each ```python block."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)]


def test_block_extraction():
    text = "a\n```python\nx = 1\n```\n```text\nnot run\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (9, "y = 2\n")]


@pytest.fixture
def clean_amp_state():
    from minigrad import amp
    from minigrad.core.modes import dispatch_hooks

    yield
    amp.enabled = False
    amp.policy.reset()
    assert dispatch_hooks.get() == (), "a docs example left a debugging hook installed"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_docs_page_runs(page, tmp_path, monkeypatch, clean_amp_state, capsys):
    import matplotlib

    if page.name == "distributed.md" and importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install -e \".[distributed]\")")
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # examples may write files (plots, checkpoints)
    namespace = {"__name__": f"docs_{page.stem}"}
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    for line, code in blocks:
        compiled = compile(code, f"{page.name}:{line}", "exec")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # fp16 overflow examples
            try:
                exec(compiled, namespace)
            except Exception as e:  # name the page and line of the failing block
                raise AssertionError(f"{page.name}, block at line {line} failed: "
                                     f"{type(e).__name__}: {e}") from e


def test_policy_table_in_amp_md_is_generated_and_current():
    spec = importlib.util.spec_from_file_location("gen_policy_table",
                                                  DOCS / "gen_policy_table.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = (DOCS / "amp.md").read_text(encoding="utf-8")
    assert gen.render() in text
    assert gen.update(DOCS / "amp.md", check=True), \
        "docs/amp.md is stale: run `python docs/gen_policy_table.py`"
    from minigrad.amp import policy

    for name in ("matmul", "softmax", "add", "batch_norm", "binary_cross_entropy", "relu"):
        assert f"`{name}`" in gen.render()
    assert f"| `{policy.get('conv2d')}` |" in gen.render()
