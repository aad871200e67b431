"""Helpers shared by the tests: device skips and on-device checks (`accel`), toy and mutant
backends (`toy_backends`, `mutants`, `report_backends`), op calls and ulp comparisons
(`reference`), graph builders (`spec_builders`), report rendering and HTML parsing (`report`,
`html`), and the material the repository does not ship (`material`)."""
