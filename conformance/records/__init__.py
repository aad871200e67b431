"""Records: frozen dataclasses that are the objects of a JSON document.

Both documents fusionspec writes (the results document, `fusionspec.conformance.grade`, and
the performance document, `fusionspec.conformance.perf`) are declared as records: `fields`
says what a record's field declares (its type and `member` metadata), `record` reads and
writes a record by those declarations (`Record`), and `schema` builds the JSON schema of a
document from its root record, so that the reader, the writer and the shipped schema cannot
drift apart.
"""
