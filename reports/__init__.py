"""fusionspec.reports: the HTML compliance report rendered from conformance results documents.

``fusionspec report RESULTS.json... -o reports/out/index.html [--baseline OLD.json]`` is the
command; the package's parts are `model` (results documents -> view model, with `runs`,
`patterns`, `failures`, `coverage`, `diff` and `legend` for the pieces), `svg` (chain diagrams
and coverage charts as inline SVG) and `render` (Jinja2 templates under ``templates/``). It reads
results documents and the spec's catalog only; it imports neither the reference nor a backend.
"""
