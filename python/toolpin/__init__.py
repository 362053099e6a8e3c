"""toolpin's helpers for eval harnesses (docs/harness.md).

Under `toolpin evals run`, a harness loads the catalog of the side being
run from TOOLPIN_MANIFEST in the shape its SDK takes (`load_tools`), and
writes one case record per case run for the case-by-case comparison
(`write_case`, or the pytest plugin, `toolpin.pytest_plugin`). The `toolpin`
binary itself is installed beside this package by the wheel.
"""

from .harness import (
    HarnessError,
    load_tools,
    tool_calls_from,
    under_toolpin,
    write_case,
)

__all__ = ["HarnessError", "load_tools", "tool_calls_from", "under_toolpin", "write_case"]
