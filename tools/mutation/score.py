"""The sampled mutation score: per area, with its 95% interval, and every survivor triaged.

A tested mutant is *killed* (the suite gave a failing verdict, or the mutated backend did not
load), *survived* (every case it ran passed, or no case reaches its lines), an *error* (the kill
command could not judge: counted apart, never as a kill) or *incompetent* (cosmic-ray could not
apply it). Each survivor must be triaged in ``triage.toml`` beside this file:

- ``equivalent``: no input can tell the mutant from the reference (``why`` says why);
- ``missed``: a real bug the suite does not catch (``corner`` names what no case reaches).

The score is killed / (killed + non-equivalent survivors): the catch rate of bugs that can be
caught at all. Its interval is Wilson's 95% score interval, which stays inside [0, 1] and is
honest for small counts. Survivors not yet in the triage file count as missed.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome
from sample import AREAS, area_of

TRIAGE = Path(__file__).with_name("triage.toml")


def wilson(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval for `hits` of `total` (95% by default)."""
    if total == 0:
        return (0.0, 1.0)
    p = hits / total
    centre = p + z * z / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    scale = 1 + z * z / total
    return (max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale))


#: A changed line shorter than this is named with the line before it in the key.
SHORT_CHANGE = 25


def survivor_key(module: str, definition: str | None, operator: str, diff: str) -> str:
    """A survivor's name in the triage file: its file, the function (or class) holding it, its
    operator and the removed and added lines of its diff (stable while the code around it
    moves; the function tells apart the same change made in two places of one file)."""
    lines = [line for line in diff.splitlines() if not line.startswith(("+++", "---", "@@"))]
    changed = [line[1:].strip() for line in lines if line.startswith(("+", "-"))]
    text = " => ".join(changed)
    if changed and len(changed[0]) < SHORT_CHANGE:
        # A short line (`continue`, `return None`) recurs within one function: the line
        # before it tells the places apart.
        first = next(i for i, line in enumerate(lines) if line.startswith(("+", "-")))
        before = [line[1:].strip() for line in lines[:first] if line[1:].strip()]
        text = f"{before[-1] if before else '<start>'} | {text}"
    return (f"{module.removeprefix('fusionspec_shadow/')} :: {definition or '<module>'} :: "
            f"{operator.split('/')[-1]} :: {text}")


@dataclass
class Area:
    killed: int = 0
    survived: int = 0
    errors: int = 0
    incompetent: int = 0
    equivalent: int = 0
    missed: list[str] = field(default_factory=list)

    @property
    def score(self) -> tuple[int, int]:
        return self.killed, self.killed + self.survived - self.equivalent


def load_triage(path: Path = TRIAGE) -> dict[str, dict[str, str]]:
    if not path.is_file():
        return {}
    entries = tomllib.loads(path.read_text()).get("survivor", [])
    return {e["key"]: e for e in entries}


def score(session: Path, triage: dict[str, dict[str, str]]) -> dict[str, object]:
    areas = {name: Area() for name in AREAS}
    survivors: list[dict[str, str]] = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = {item.job_id: item for item in db.work_items}
        for job_id, result in db.results:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            mutation = items[job_id].mutations[0]
            module = mutation.module_path.as_posix()
            area = areas[area_of(module) or "executor"]
            output = result.output or ""
            if re.search(r"^error:", output, re.M):
                area.errors += 1
            elif result.test_outcome == TestOutcome.INCOMPETENT:
                area.incompetent += 1
            elif result.test_outcome == TestOutcome.KILLED:
                area.killed += 1
            else:
                area.survived += 1
                key = survivor_key(module, mutation.definition_name, mutation.operator_name,
                                   result.diff or "")
                entry = triage.get(key)
                verdict = entry["verdict"] if entry else "untriaged"
                if verdict == "equivalent":
                    area.equivalent += 1
                else:
                    area.missed.append(key)
                reach = re.search(r"(\d+) case\(s\) reach it", output)
                survivors.append({"area": area_of(module) or "executor", "key": key,
                                  "verdict": verdict, "cases": reach.group(1) if reach else "?",
                                  "diff": result.diff or ""})
    summary: dict[str, object] = {}
    total = Counter[str]()
    for name, area in areas.items():
        hits, of = area.score
        low, high = wilson(hits, of)
        summary[name] = {"killed": area.killed, "survived": area.survived,
                         "equivalent": area.equivalent, "missed": len(area.missed),
                         "errors": area.errors, "incompetent": area.incompetent,
                         "score": hits / of if of else None, "interval": [low, high]}
        total.update({"killed": hits, "of": of, "tested": area.killed + area.survived})
    low, high = wilson(total["killed"], total["of"])
    return {"areas": summary, "tested": total["tested"], "killed": total["killed"],
            "non_equivalent": total["of"],
            "score": total["killed"] / total["of"] if total["of"] else None,
            "interval": [low, high], "survivors": survivors}


def render(result: dict[str, object]) -> str:
    lines = ["area            tested  killed  equiv.  missed  score   95% interval"]
    areas: dict[str, dict[str, object]] = result["areas"]  # type: ignore[assignment]
    for name, a in areas.items():
        tested = int(a["killed"]) + int(a["survived"])  # type: ignore[call-overload]
        s = a["score"]
        low, high = a["interval"]  # type: ignore[misc]
        shown = f"{s:6.1%}" if isinstance(s, float) else "   n/a"
        lines.append(f"{name:15} {tested:6} {a['killed']:7} {a['equivalent']:7} "
                     f"{a['missed']:7}  {shown}  [{low:.1%}, {high:.1%}]")
    s = result["score"]
    low, high = result["interval"]  # type: ignore[misc]
    shown = f"{s:.1%}" if isinstance(s, float) else "n/a"
    lines.append(f"all: {result['killed']} of {result['non_equivalent']} non-equivalent mutants "
                 f"killed ({shown}, 95% interval [{low:.1%}, {high:.1%}]) out of "
                 f"{result['tested']} tested")
    errors = sum(int(a["errors"]) + int(a["incompetent"])  # type: ignore[call-overload]
                 for a in areas.values())
    if errors:
        lines.append(f"{errors} mutant(s) not judged (the kill command failed, or cosmic-ray "
                     "could not apply them): counted in no score; see the session's dump")
    by_verdict: dict[str, list[dict[str, str]]] = defaultdict(list)
    for s_ in result["survivors"]:  # type: ignore[attr-defined]
        by_verdict[s_["verdict"]].append(s_)
    for verdict in ("untriaged", "missed"):
        for s_ in by_verdict.get(verdict, []):
            lines.append(f"\n{verdict.upper()}: {s_['key']}  ({s_['cases']} case(s) ran)")
            lines.append(s_["diff"].rstrip())
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    outcome = score(Path(sys.argv[1]), load_triage())
    print(render(outcome))
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(outcome, indent=1))
