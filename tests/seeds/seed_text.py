"""The seed documents' code blocks, for tests that check their copies are verbatim.

The seeds live in ``shared/seeds/`` beside the repository (not in it); a test skips when the
checkout has no ``shared/`` next to it.
"""

import pathlib
import re

import pytest

_SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "seeds"
_BLOCK = re.compile(r"^```[Pp]ython[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def seed_blocks(name: str) -> list:
    """The ```python blocks of seed document ``name`` (e.g. ``"002_73132a1b9011cdbc.txt"``)."""
    path = _SHARED / name
    if not path.exists():
        pytest.skip(f"the seed document {name} is not beside this checkout")
    return _BLOCK.findall(path.read_text(encoding="utf-8"))
