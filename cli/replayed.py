"""What ``fusionspec conform --replay`` shows and keeps beyond the verdict.

After the case is judged again, the reference's outputs (``expected.npz``) and the backend's
(``actual.npz``) are written into the failure folder, from the same inputs (``inputs.npz``
when saved, else filled from the recorded seed), so the two can be compared element by
element with any tool; the worst elements of a numeric mismatch are printed under the verdict.
"""

from __future__ import annotations

from pathlib import Path

from fusionspec.conformance.cases import Case, Verdict
from fusionspec.conformance.grade.details import Details
from fusionspec.conformance.grade.document import ResultsFormatError
from fusionspec.conformance.replay import ReplayError, worst_lines
from fusionspec.conformance.workers import Runner
from fusionspec.reference.arrays import read_npz, write_npz
from fusionspec.reference.execute import execute
from fusionspec.reference.filling import fill_inputs
from fusionspec.spec.errors import FusionspecError

__all__ = ["save_outputs", "verdict_lines"]


def save_outputs(runner: Runner, case: Case, folder: Path) -> list[str]:
    """Write ``expected.npz`` and ``actual.npz`` into `folder` (inputs not saved there are
    filled from the seed `runner` judges with); lines saying what was written (or why an
    output could not be had)."""
    try:
        graph = case.graph if case.graph.finalized else case.graph.finalize()
    except FusionspecError:
        return []  # an ill-formed graph has no outputs to compare
    lines = []
    try:
        saved = folder / "inputs.npz"
        inputs = read_npz(saved, graph.input_tensors) if saved.is_file() else \
            fill_inputs(graph, runner.run_settings.seed, case.values)
        write_npz(folder / "expected.npz", execute(graph, inputs), graph.tensors)
        lines.append(f"expected: {folder / 'expected.npz'} (the reference)")
    except (FusionspecError, OSError, ValueError) as exc:
        return [f"no outputs saved: {type(exc).__name__}: {exc}"]
    try:
        write_npz(folder / "actual.npz", runner.outputs(graph, inputs), graph.tensors)
        lines.append(f"actual:   {folder / 'actual.npz'} (the backend)")
    except ReplayError as exc:
        lines.append(f"actual:   not saved, the backend gave no outputs: {exc}")
    except (FusionspecError, OSError, ValueError) as exc:
        lines.append(f"actual:   not saved: {type(exc).__name__}: {exc}")
    return lines


def verdict_lines(case: Case, verdict: Verdict, where: str) -> list[str]:
    """The replayed verdict: status, case and where it ran, the reason, the worst elements."""
    described = f" ({case.description})" if case.description else ""
    lines = [f"{verdict.status.value}: {case.id}{described} on {where}"]
    if verdict.reason:
        lines.append(f"  {verdict.reason}")
    trace = verdict.details.get("traceback")
    if isinstance(trace, str) and trace:
        lines.append("  what the backend raised:")
        lines += [f"    {line}" for line in trace.splitlines()]
    worst = worst_lines(_worst_of(verdict))
    if worst:
        lines.append("  worst elements (index: reference vs backend):")
        lines += [f"    {line}" for line in worst]
    return lines


def _worst_of(verdict: Verdict) -> Details:
    """The failing output and its worst elements as a results document records them (the
    rest of the details is not needed here, so a value elsewhere that does not read costs
    nothing); none where they do not read."""
    try:
        return Details.of({key: verdict.details.get(key) for key in ("tensor", "worst")})
    except ResultsFormatError:
        return Details()
