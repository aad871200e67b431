"""The kernel templates hold one kernel form each (``accel/templates``): a family picks its
form in Python and renders that form's template; the pieces several forms share are partials
(``_<family>_*.cl.j2``) that the form templates include, import or extend.
"""

from __future__ import annotations

import re
from pathlib import Path

from fusionspec.accel.codegen.source import TEMPLATES

#: Per family (its templates' prefix), the template values that used to select a kernel form
#: inside one template: the reduction's per-output or per-group kernel, the training family's
#: statistics and element-wise kernels and their batch-norm variant, the GEMM's
#: register-blocked or tiled kernel.
_FORM_SWITCHES = {"reduction": {"per_output"}, "training": {"stats", "elementwise", "bn"},
                  "gemm": {"register"}}
_CONDITION = re.compile(r"\{%-?\s*(?:if|elif)\s+(?P<test>.*?)-?%\}")
_USES = re.compile(r"\{%-?\s*(?:include|import|extends|from)\s+\"(?P<name>[^\"]+)\"")
_ACCEL = Path(TEMPLATES).parent


def _templates() -> list[Path]:
    return sorted(Path(TEMPLATES).glob("*.cl.j2"))


def _family(path: Path) -> str:
    """The family a template belongs to: its name's first word (``_training_stats`` ->
    ``training``)."""
    return re.split(r"[_.]", path.name.lstrip("_"))[0]


def test_no_template_switches_between_kernel_forms() -> None:
    found = [(path.name, m.group("test").strip())
             for path in _templates() for m in _CONDITION.finditer(path.read_text())
             if set(re.findall(r"\w+", m.group("test"))) & _FORM_SWITCHES.get(_family(path), set())]
    assert not found, f"templates still choosing a kernel form by a test: {found}"


def test_every_form_template_is_rendered_and_every_partial_used() -> None:
    sources = "\n".join(p.read_text() for p in _ACCEL.rglob("*.py"))
    used = {m.group("name") for path in _templates() for m in _USES.finditer(path.read_text())}
    for path in _templates():
        if path.name.startswith("_"):
            assert path.name in used, f"partial {path.name} is used by no template"
        else:
            assert f'"{path.name}"' in sources, f"template {path.name} is rendered by no family"
    missing = sorted(name for name in used if not (Path(TEMPLATES) / name).exists())
    assert not missing, f"templates used but absent: {missing}"
