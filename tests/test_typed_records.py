"""Results, performance and findings data cross module boundaries as typed records.

Every public function and method of the modules that carry a run's results (grading, the
results and perf documents, expectations, JUnit, replay, the reports, the commands) is read
for its parameter and return annotations: none may be a mapping of string keys to anything
(``dict[str, Any]``, ``Mapping[str, object]``, ``Json`` ...). Such data is a record; JSON
appears only where a record is read from or written to it (``read``, ``from_json``,
``to_json``), in the JSON schemas built from the records, and in the few places listed in
`ALLOWED`, each with the reason it is not results data.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The modules whose public signatures are checked (globs, relative to the package root).
CHECKED = ("conformance/grade/*.py", "conformance/perf/*.py", "conformance/records/*.py",
           "conformance/expectations*.py", "conformance/junit.py", "conformance/replay.py",
           "conformance/plugin.py", "conformance/coverage_cache.py",
           "conformance/method_rows.py", "conformance/generate/methods.py", "reports/*.py",
           "cli/*.py")

#: Annotations that are a mapping of string keys to anything.
UNTYPED = ("dict[str, Any]", "Mapping[str, Any]", "dict[str, object]", "Mapping[str, object]",
           "Json")

#: Where records meet JSON: reading it, writing it, and the schema built from the records.
SERIALISING = frozenset({"read", "from_json", "to_json", "of", "upgrade", "decode", "encode",
                         "member"})

#: `module:function` -> why its JSON-shaped signature is not results data.
ALLOWED: dict[str, str] = {
    "conformance/grade/tolerances.py:accuracy_table":
        "the accuracy table as rows for the docs and the report, not a run's data",
    "conformance/grade/schema_check.py:compile_schema":
        "compiles a JSON schema, which is JSON by nature",
    "conformance/expectations_file.py:load_schema":
        "the expectations file's JSON schema",
    "conformance/expectations_file.py:Expectation.table":
        "an entry as the TOML table it is written as",
    "conformance/expectations_file.py:render_toml":
        "renders TOML tables",
    "cli/validate.py:validate_file":
        "the validate command's report on a graph file (its --json output)",
    "cli/run.py:summarise":
        "the run command's summary of one output array (its --json output)",
    "cli/partition.py:partition_to_dict":
        "the partition command's --json output of a partitioning",
    "conformance/grade/results.py:ResultsCollector.to_dict":
        "the collected document written as JSON (document().to_json(), what write() writes)",
    "reports/mutation.py:mutation_view":
        "reads the mutation-score document, a document family of its own",
}


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    for arg in args:
        if arg.annotation is not None:
            yield ast.unparse(arg.annotation)
    if node.returns is not None:
        yield ast.unparse(node.returns)


def _public_functions(path: Path) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    def walk(body: list[ast.stmt], prefix: str) -> Iterator[
            tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                yield from walk(node.body, f"{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not node.name.startswith("_") or node.name == "__init__"):
                yield f"{prefix}{node.name}", node
    yield from walk(ast.parse(path.read_text(encoding="utf-8")).body, "")


def _untyped_signatures() -> list[str]:
    found = []
    for pattern in CHECKED:
        for path in sorted(ROOT.glob(pattern)):
            module = path.relative_to(ROOT).as_posix()
            if "schema" in path.stem:  # the JSON schemas generated from the records
                continue
            for name, node in _public_functions(path):
                if name.rsplit(".", 1)[-1] in SERIALISING or f"{module}:{name}" in ALLOWED:
                    continue
                bad = [a for a in _annotations(node) if any(u in a for u in UNTYPED)]
                if bad:
                    found.append(f"{module}:{name} ({', '.join(bad)})")
    return found


def test_results_perf_and_findings_data_cross_modules_as_records() -> None:
    untyped = _untyped_signatures()
    assert not untyped, (
        "these public signatures take or give a mapping of string keys where a record of the "
        "results, perf or findings data belongs:\n  " + "\n  ".join(untyped))


@pytest.mark.parametrize("entry", sorted(ALLOWED))
def test_every_allowed_signature_still_exists(entry: str) -> None:
    module, name = entry.split(":")
    names = {n for n, _ in _public_functions(ROOT / module)}
    assert name in names, f"{entry} is allowed a JSON-shaped signature but no longer exists: " \
                          "remove it from ALLOWED"
