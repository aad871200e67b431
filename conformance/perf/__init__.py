"""Performance conformance: does each fusion of the catalog pay on a backend?

Workloads from real networks per pattern (`workloads`, built by `graphs`), the fused,
op-by-op and reference sides on the backend under test (`sides`), the run (`bench`), the
roofline figures (`roofline`), the verdicts (`verdicts`), the performance document
(`document`, read to typed records: `records`, declared with `fusionspec.conformance.records`;
its schema, generated from them: `perf.schema.json`) and the gate between two documents
(`gate`).
"""
