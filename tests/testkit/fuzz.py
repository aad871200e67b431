"""Fuzzing the command line: hostile JSON values, mutations of a seed document, and a sandbox
that tells what a command wrote and where.

Every entry point's fuzz test runs the command in-process (`fusionspec.cli.main.main`) inside a
fresh sandbox folder, its inputs under ``in/`` and its outputs named under ``out/``, and checks
the same three things: the command ended with an exit code (no exception escaped, no traceback
printed), it wrote nothing outside ``out/``, and what it wrote is inert in its medium. Its
standard output and error are strict UTF-8 streams, as a terminal's are, so text that cannot be
written (a lone surrogate) fails the test as it would fail the command.

The hostile values include text no UTF-8 writer takes, noncharacters, control characters,
escape sequences and bidirectional overrides (`UNFIT_TEXTS`); `hostile_text` draws strings
mixing them with ordinary characters, for any text field a test fills.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from fusionspec.cli.main import main
from testkit.html import Node, parse

#: For fuzz tests: no deadline (a loaded machine), few examples (each one runs a command);
#: ``FUSIONSPEC_FUZZ_EXAMPLES`` asks for more (and a random search rather than a fixed one).
_EXAMPLES = os.environ.get("FUSIONSPEC_FUZZ_EXAMPLES")
FUZZ = settings(deadline=None, max_examples=int(_EXAMPLES or 40), derandomize=not _EXAMPLES,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Replaced into the JSON value at a path by placeholder, since `json.dumps` cannot write it.
DEEP = "\u0000deep\u0000"
DEEP_TEXT = "[" * 100_000 + "]" * 100_000

#: Text that cannot be written as UTF-8 (lone surrogates), noncharacters, C0 and C1 controls,
#: escape sequences and bidirectional overrides and isolates.
UNFIT_TEXTS: tuple[str, ...] = (
    "\ud800", "a\udfffb", "\udbff\udc00x\udc00", "\ufffe", "\uffff", "\U0010ffff\ufdd0",
    "\x00", "nul\x00in\x07the\x08middle", "\x1b[2K\x1b[1APASS", "\x1b]0;title\x07",
    "\x9b31m\x85\x9f", "\u202eevil\u202c", "\u202a\u202b\u202d", "\u2066\u2067\u2068x\u2069",
    "\r\nline\x0bfeed\x0c", "fail\ud800\x1b[31m\u202e",
)
#: Characters `hostile_text` draws from besides ordinary ones.
_UNFIT_CHARS = "".join(sorted(set("".join(UNFIT_TEXTS))))


def hostile_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Strings mixing ordinary characters with `UNFIT_TEXTS`' characters and sequences."""
    pieces = st.one_of(st.sampled_from(UNFIT_TEXTS), st.sampled_from(_UNFIT_CHARS),
                       st.text(max_size=8))
    return st.lists(pieces, max_size=max_size // 4 or 1).map("".join)


#: JSON values a careless or hostile producer writes where something else is expected.
HOSTILE_VALUES: tuple[Any, ...] = (*UNFIT_TEXTS,
    None, True, 0, -1, 1.5, 2**62, -(2**63), 10**30, 3e38, -3e38, 1e308, "", ".", "..", "/",
    "../../outside", "x" * 5000, "\u00b2", "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">', "x; rm -rf ~ #", "$(touch pwned)", "line\nbreak",
    [], [None], [-1, -1], [2**62, 4], [0.5, 1.5], {}, {"type": "s64", "value": 2**62},
    {"a": {"b": {}}}, DEEP,
)


def json_paths(doc: Any, prefix: tuple[Any, ...] = (), width: int = 12
               ) -> Iterator[tuple[Any, ...]]:
    """Every path into `doc` (the first `width` members of each container)."""
    yield prefix
    if isinstance(doc, dict):
        for key in list(doc)[:width]:
            yield from json_paths(doc[key], (*prefix, key), width)
    elif isinstance(doc, list):
        for index in range(min(len(doc), width)):
            yield from json_paths(doc[index], (*prefix, index), width)


@dataclass(frozen=True)
class Mutation:
    """One edit of a JSON document: at `path`, `action` ('set', 'drop' or 'dup') with `value`."""

    path: tuple[Any, ...]
    action: str
    value: Any = None

    def apply(self, doc: Any) -> Any:
        if not self.path:
            return self.value if self.action == "set" else doc
        parent = doc
        for key in self.path[:-1]:
            parent = parent[key]
        key = self.path[-1]
        if self.action == "set":
            parent[key] = self.value
        elif self.action == "drop":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        return doc


@st.composite
def mutated(draw: st.DrawFn, seed: Any, extra_values: Sequence[Any] = (),
            most: int = 3) -> str:
    """`seed` with one to `most` mutations, as JSON text."""
    doc = copy.deepcopy(seed)
    values = st.sampled_from([*HOSTILE_VALUES, *extra_values])
    for _ in range(draw(st.integers(1, most))):
        paths = list(json_paths(doc))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(("set", "set", "set", "drop", "dup")))
        try:
            # A copy: a later edit must not change the shared table of values.
            doc = Mutation(path, action, copy.deepcopy(draw(values))).apply(doc)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed the path's parent
    text = json.dumps(doc)
    return text.replace(json.dumps(DEEP), DEEP_TEXT)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (links as their target's path) with its bytes."""
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = b"->" + str(path.readlink()).encode()
        elif path.is_file():
            found[key] = path.read_bytes()
    return found


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    #: Files created, changed or removed outside the sandbox's ``out/`` folder.
    trespass: list[str]


@contextlib.contextmanager
def sandbox() -> Iterator[Path]:
    """A fresh folder holding ``box/in`` and ``box/out`` (the latter not created), inside an
    outer folder, so that a write just outside the box is seen too. Yields the box."""
    with tempfile.TemporaryDirectory(prefix="fusionspec-fuzz-") as outer:
        box = Path(outer) / "box"
        (box / "in").mkdir(parents=True)
        yield box


def run_cli(box: Path, argv: Sequence[str | Path]) -> Outcome:
    """Run ``fusionspec argv`` in-process and report what it printed and wrote outside
    ``box/out``."""
    outer = box.parent
    before = snapshot(outer)
    out, err = _strict_stream(), _strict_stream()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    after = snapshot(outer)
    if log := os.environ.get("FUSIONSPEC_FUZZ_LOG"):
        # How far the fuzz gets: the share of exit 0 says how much got past the validation.
        with open(log, "a", encoding="utf-8") as record:
            record.write(f"{argv[0]} {code}\n")
    allowed = os.path.join("box", "out")
    trespass = sorted(name for name in before.keys() | after.keys()
                      if before.get(name) != after.get(name)
                      and not (name == allowed or name.startswith(allowed + os.sep)))
    return Outcome(code, _read_back(out), _read_back(err), trespass)


def _strict_stream() -> io.TextIOWrapper:
    """A text stream that encodes as a terminal's does: UTF-8, strictly."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n")


def _read_back(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO), "a stream of _strict_stream"
    return buffer.getvalue().decode("utf-8")


#: Characters a terminal acts on rather than shows (escape, CSI, bidirectional overrides).
_TERMINAL_CONTROLS = frozenset("\x1b\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def assert_clean(outcome: Outcome, what: str, *, json_out: bool = False) -> None:
    """The checks every entry point's fuzz test makes (see the module docstring)."""
    printed = outcome.out + outcome.err
    assert isinstance(outcome.code, int), f"{what}: exit code {outcome.code!r} is not an int"
    assert "Traceback" not in printed, f"{what}: printed a traceback:\n{printed[-3000:]}"
    shown = sorted({c for c in printed if c in _TERMINAL_CONTROLS})
    assert not shown, f"{what}: printed terminal controls {shown!r}:\n{printed[-2000:]!r}"
    assert not outcome.trespass, f"{what}: wrote outside its output folder: {outcome.trespass}"
    if outcome.code != 0:
        assert outcome.err.strip() or outcome.out.strip(), f"{what}: exit {outcome.code} " \
            "without a word on what went wrong"
    if json_out and outcome.out.strip():
        try:
            json.loads(outcome.out)
        except ValueError as exc:
            raise AssertionError(f"{what}: --json printed something that is not one JSON "
                                 f"document ({exc}):\n{outcome.out[:2000]}") from None


def markdown_html(text: str) -> Node:
    """Markdown as a CommonMark renderer with tables (GitHub's dialect) shows it; raw HTML is
    enabled, as on most Markdown hosts, so escaped markup is the only defence."""
    return parse(MarkdownIt("commonmark").enable("table").render(text))


#: Elements that run code or load something.
ACTIVE = frozenset({"script", "img", "iframe", "style", "object", "embed"})


def active_elements(root: Node) -> collections.Counter[str]:
    """How many elements of each active kind `root` holds."""
    return collections.Counter(node.tag for node in root.walk() if node.tag in ACTIVE)


def assert_inert(root: Node, where: str, own: Mapping[str, int] | None = None) -> None:
    """No element, attribute or URL in `root` that runs code came from the data: active
    elements at most as many as the document's template has of its own (`own`)."""
    for tag, count in active_elements(root).items():
        assert count <= (own or {}).get(tag, 0), \
            f"{where}: {count} <{tag}> element(s), the template has {(own or {}).get(tag, 0)}"
    for node in root.walk():
        for name, value in node.attrs.items():
            assert not name.startswith("on"), f"{where}: event attribute {name} on <{node.tag}>"
            assert "javascript:" not in value.lower(), f"{where}: javascript: URL in {name}"
