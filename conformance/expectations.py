"""The expectations file: what a backend's CI knows its backend does not do yet.

A backend team checks a TOML file into its repository and passes it to every run
(``fusionspec conform --expectations FILE``, ``pytest --fs-expectations FILE``)::

    schema = "fusionspec-expectations/2"

    [[expect]]
    status = "fail"                      # run it, expect a failing verdict
    pattern = "int8.*"                   # globs over pattern ids
    dtype = "int8"
    verdicts = ["numeric-mismatch"]      # optional: which failing statuses are expected
    reason = "u8 rounding is half-up, the spec rounds half to even"
    link = "https://github.com/org/backend/issues/12"

    [[expect]]
    status = "skip"                      # do not run it at all (it hangs the device)
    case = "softmax.post_ops/valid/1a2b3c4d"
    reason = "hangs the GPU driver"

An entry matches a case when every field it gives matches (``pattern``, ``kind``, ``rule``,
``dtype``, ``case``, ``device``; each a value or a list of values, any of which may match;
``pattern``, ``rule``, ``case`` and ``device`` are globs). The first matching entry decides.
The file is validated against ``expectations.schema.json`` (shipped beside this module; editors
that read JSON schemas can check the file as it is written) and then against the catalog (a
pattern or rule glob must match something), each problem reported with the file and the entry.

What an entry does to a case (`Expectations.match` finds the entry; the suite and the results
document, `fusionspec.conformance.grade.results`, apply it):

- ``skip``: the case is not judged; the results document lists it with the reason;
- ``fail``: the case is judged; a failing verdict (of one of ``verdicts``, when given) is an
  *expected failure*: recorded with its status and the reason, saved and replayable like any
  failure, but it does not fail the run. A case that does not fail is an *unexpected pass*:
  reported, and an error in strict mode (``--strict-expectations``): the entry is stale.

Limitations a backend declares in its class (`fusionspec.backend.Limitation`) are the backend's
own statement and stay as they are (``unsupported``); expectations are its CI's.

Writing a file from a run (``--write-expectations FILE``; `regenerate`, in
`fusionspec.conformance.expectations_write`, which takes the run's results document as its
`ResultsDocument` record) keeps every entry of the file the run used, with
its reason, and adds one entry per cause among the failures no entry expected, its title as the
reason to edit and in ``finding``. ``--prune-expectations`` also leaves out the entries the run
proved stale (`fusionspec.conformance.expectations_stale`). Version 1 files (without
``finding``) are read as they are; files are written as version 2.

This module gathers the public names of those modules; the file itself (its entries, matching,
reading) is `fusionspec.conformance.expectations_file`, and how a written entry's cases are
listed compactly is `fusionspec.conformance.expectations_compact`.
"""

from __future__ import annotations

from .expectations_file import (
    EXPECTATIONS_SCHEMA,
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    READABLE_SCHEMAS,
    Expectation,
    Expectations,
    ExpectationsError,
    load_schema,
    render_toml,
)
from .expectations_stale import stale_entries, stale_lines, unexpected_pass_note
from .expectations_write import (
    FailureGroup,
    Grouper,
    Written,
    check_target,
    check_write_options,
    expectations_toml,
    groups_by_pattern_and_status,
    regenerate,
)

__all__ = ["EXPECTATIONS_SCHEMA", "READABLE_SCHEMAS", "MAX_ENTRIES", "MAX_FILE_BYTES",
           "ExpectationsError", "Expectation", "Expectations", "load_schema", "render_toml",
           "FailureGroup", "Grouper", "Written", "regenerate", "expectations_toml",
           "groups_by_pattern_and_status", "check_write_options", "check_target",
           "stale_entries", "stale_lines", "unexpected_pass_note"]
