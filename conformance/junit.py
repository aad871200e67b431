"""JUnit XML from a results document, for CI dashboards that read test reports.

`junit_xml` writes the common JUnit schema (the one Jenkins, GitLab, GitHub test-report actions
and Azure read): one ``<testsuites>`` holding one ``<testsuite>`` (the backend on its device)
with a ``<testcase>`` per judged or skipped case, named by the case id, its ``classname`` the
case's pattern, its ``time`` the seconds it took. A case ends as:

- passed (``passed``, ``extension``): an empty test case;
- an unexpected failure: ``<failure>`` whose ``type`` is the verdict status and whose
  ``message`` the reason; its text adds the worst elements and the command that replays it
  (``<error>`` for ``error`` and ``timeout``, the backend's crash or hang);
- ``unsupported`` (a declared limitation), an expected failure and a case the expectations
  file skips: ``<skipped>`` with the reason (``type`` ``unsupported``, ``xfail`` or
  ``skip``);
- an expected failure that passes: a pass with a note in ``<system-out>``, or a
  ``<failure>`` of type ``unexpected-pass`` under ``--strict-expectations``.

A backend that cannot run is one ``<error>`` test case. The counts (``tests``, ``failures``,
``errors``, ``skipped``, ``time``) are on both levels.

The text comes from a results document, which holds a backend's and an expectations file's
words: every character XML 1.0 does not allow (control characters but tab, newline and carriage
return, lone surrogates, U+FFFE and U+FFFF) is replaced with U+FFFD, so the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from .cases import Status
from .grade.document import CaseRecord, FailureRecord, ResultsDocument, VerdictLine
from .replay import worst_lines

__all__ = ["junit_xml", "xml_legal", "ERROR_STATUSES"]

#: Verdict statuses reported as ``<error>`` (the backend crashed or hung) rather than
#: ``<failure>`` (it answered wrong).
ERROR_STATUSES: frozenset[str] = frozenset({Status.error, Status.timeout})

# Every character outside XML 1.0's Char production.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_legal(text: str) -> str:
    """`text` with every character XML 1.0 does not allow replaced with U+FFFD (markup that
    ElementTree escaped is left as it is: it is made of allowed characters)."""
    return _NOT_XML.sub("\ufffd", text)


def _cite(cited: Mapping[str, Any]) -> str:
    """An expectations entry as a record cites it (its number, reason and link)."""
    link = f" ({cited['link']})" if cited.get("link") else ""
    return f"expectations entry {cited.get('entry')}: {cited.get('reason')}{link}"


def _failure_text(failure: FailureRecord) -> str:
    lines = [f"{failure.status}: {failure.case_id}"
             + (f" ({failure.description})" if failure.description else ""),
             f"  {failure.reason}"]
    worst = worst_lines(failure.details)
    if worst:
        lines.append("  worst elements (index: reference vs backend):")
        lines += [f"    {line}" for line in worst]
    for command in failure.replay.commands:
        lines.append(f"  replay (from the results folder): {command}")
    if failure.replay.rerun:
        lines.append(f"  rerun: {failure.replay.rerun}")
    return "\n".join(lines)


def _outcome(case: ET.Element, verdict: VerdictLine, failure: FailureRecord | None,
             passed_anyway: CaseRecord | None, strict: bool) -> str:
    """Fill `case` for `verdict`; the counter it adds to (``""`` for a pass)."""
    status, reason = verdict.status, verdict.reason
    if verdict.expected:
        ET.SubElement(case, "skipped", type="xfail",
                      message=f"expected failure ({status}): {_cite(verdict.expected)}")
        return "skipped"
    if status == "unsupported":
        ET.SubElement(case, "skipped", type="unsupported", message=reason)
        return "skipped"
    if failure is not None:
        tag = "error" if status in ERROR_STATUSES else "failure"
        ET.SubElement(case, tag, type=status, message=f"{status}: {reason}").text = \
            _failure_text(failure)
        return "errors" if tag == "error" else "failures"
    if passed_anyway is not None:
        note = f"passes, but {_cite(passed_anyway.extra)} expects it to fail"
        if strict:
            ET.SubElement(case, "failure", type="unexpected-pass", message=note).text = note
            return "failures"
        ET.SubElement(case, "system-out").text = note
    return ""


def _row(record: VerdictLine | CaseRecord) -> int:
    """Where a case stands in the plan (0 for a record that does not say)."""
    return record.index or 0


def junit_xml(document: ResultsDocument) -> str:
    """The JUnit XML of a results document (see the module docstring)."""
    failures = {f.case_id: f for f in document.failures if not f.minimal_of}
    passes = {p.case_id: p for p in document.unexpected_passes}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    suite = ET.Element("testsuite", name=f"fusionspec {document.backend} on "
                                         f"{document.device.id}",
                       timestamp=document.started or "")
    rows: list[tuple[int, VerdictLine | CaseRecord]] = \
        [(_row(v), v) for v in document.verdicts] + [(_row(s), s) for s in document.skipped]
    for _, record in sorted(rows, key=lambda row: row[0]):
        seconds = (record.seconds or 0.0) if isinstance(record, VerdictLine) else 0.0
        total += seconds
        case = ET.SubElement(suite, "testcase", name=record.case_id,
                             classname=record.pattern, time=f"{seconds:.3f}")
        counts["tests"] += 1
        if isinstance(record, CaseRecord):
            ET.SubElement(case, "skipped", type="skip",
                          message=f"skipped by {_cite(record.extra)}")
            counts["skipped"] += 1
            continue
        counter = _outcome(case, record, failures.get(record.case_id),
                           passes.get(record.case_id), document.strict)
        if counter:
            counts[counter] += 1
    if document.unavailable:
        # A run that judged nothing still shows on a dashboard, as one error.
        case = ET.SubElement(suite, "testcase", name="the backend", classname="fusionspec",
                             time="0.000")
        ET.SubElement(case, "error", type="unavailable",
                      message=f"the backend cannot run: {document.unavailable}")
        counts["tests"] += 1
        counts["errors"] += 1
    elif document.incomplete:
        ET.SubElement(suite, "system-err").text = \
            f"the run is incomplete: {document.incomplete}"
    attributes = {name: str(value) for name, value in counts.items()}
    attributes["time"] = f"{total:.3f}"
    suite.attrib.update(attributes)
    root = ET.Element("testsuites", {"name": "fusionspec conformance", **attributes})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + \
        xml_legal(ET.tostring(root, encoding="unicode")) + "\n"
