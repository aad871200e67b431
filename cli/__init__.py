"""fusionspec.cli: the ``fusionspec`` command line, on the top floor.

`fusionspec.cli.main` parses and dispatches; each command is one module named after it
(``fusionspec validate`` is `fusionspec.cli.validate`, ``fusionspec conform`` is
`fusionspec.cli.conform`, ...); `fusionspec.cli.output` prints text or JSON.
"""
