"""The coverage model as the report shows it, kept on disk, so that a report does not compute it
again (computing it costs seconds; reading it back, milliseconds).

What the report needs of the coverage model (`coverage_model`) is, per catalog pattern, the
items its cases must reach (the suite's strategies' `coverage_items`, the methods' `all_items`
and the near misses' `structure_items`), and the methods as data (`method_table`, with the
pairs only the thorough profile draws). All of it is a function of the suite's sources, so it
is kept beside the drawn cases (`fusionspec.conformance.draw_cache`): in the draw cache's
folder, under a key made from the draw cache's `code_digest` (the sources of spec, backend,
reference and conformance, and the versions of Python, hypothesis, NumPy and ml_dtypes), turned
off and moved by the same ``FUSIONSPEC_DRAW_CACHE``. A changed suite makes a new key and never
reads an older entry.

The entry is JSON, never a pickle, signed like the draw cache's entries
(`fusionspec.conformance.cache_files`: HMAC-SHA256 under the folder's key, over the entry and
its cache key) and read back only from a plain file of at most `ENTRY_LIMIT` bytes whose
signature verifies and whose content has the model's shape. Anything else is refused with a
one-line warning on standard error, deleted, and the model computed again: a bad entry costs
time, never a wrong report. An entry is written only when it reads back equal to what was
computed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from fusionspec.spec.catalog import CATALOG

from . import draw_cache
from .cache_files import (
    MAC_BYTES,
    BadEntry,
    UnusableKey,
    folder_key,
    load_signed,
    read_regular,
    say_once,
    seal,
    unseal,
    write_atomic,
)
from .method_rows import MethodRow, MethodRowError

__all__ = ["ENTRY_LIMIT", "CoverageModel", "compute", "coverage_model", "entry_path", "load",
           "model_key", "store"]

#: The largest entry read back or written (bytes): the model is about a megabyte.
ENTRY_LIMIT = 32 * 2**20
_FORMAT = 1

#: A coverage item: (feature, value).
Item = tuple[str, str]


@dataclass(frozen=True)
class CoverageModel:
    """Per pattern id, the items its cases must reach; and the methods of the coverage model as
    data (name, summary, items, and what each leaves out and why)."""

    required: dict[str, tuple[Item, ...]]
    methods: tuple[MethodRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {"format": _FORMAT,
                "required": {k: [list(item) for item in v] for k, v in self.required.items()},
                "methods": [method.to_json() for method in self.methods]}

    @staticmethod
    def from_json(data: object) -> CoverageModel:
        """The model in `data` (parsed JSON); `BadEntry` saying why it is not one."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise BadEntry("it is not an entry of this cache")
        required, methods = data.get("required"), data.get("methods")
        if not isinstance(required, dict) or list(required) != [e.id for e in CATALOG]:
            raise BadEntry("it does not hold the catalog's patterns")
        for items in required.values():
            if not isinstance(items, list) or not all(
                    isinstance(i, list) and len(i) == 2 and all(isinstance(s, str) for s in i)
                    for i in items):
                raise BadEntry("its items are not (feature, value) pairs")
        if not isinstance(methods, list):
            raise BadEntry("its methods are not a list")
        try:
            rows = tuple(MethodRow.from_json(method) for method in methods)
        except MethodRowError as exc:
            raise BadEntry(str(exc)) from None
        return CoverageModel({k: tuple((f, v) for f, v in items)
                              for k, items in required.items()}, rows)


def coverage_model() -> CoverageModel | None:
    """The coverage model: read back from the cache, or computed (and kept); None when
    hypothesis (of the ``conformance`` extra) is not installed."""
    try:
        key = model_key()
    except metadata.PackageNotFoundError:
        key = None  # hypothesis (or NumPy's kin) is missing: `compute` says which
    if key is not None and draw_cache.enabled():
        found = load(key)
        if found is not None:
            return found
    model = compute()
    if model is not None and key is not None and draw_cache.enabled():
        store(key, model)
    return model


def compute() -> CoverageModel | None:
    """The coverage model, computed; None without hypothesis."""
    try:
        from .generate.coverage import coverage_items
        from .generate.items import all_items, thorough_only
        from .generate.methods import method_table
        from .generate.near_miss import structure_items
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        return None
    required = {entry.id: coverage_items(entry) + all_items(entry) + structure_items(entry)
                for entry in CATALOG}
    return CoverageModel(required, method_table(thorough_only()))


def model_key() -> str:
    """The cache key of the model under this code (`PackageNotFoundError` without one of the
    packages the code digest names)."""
    return draw_cache.draw_key("report coverage model", _FORMAT)


def entry_path(key: str) -> Path:
    """Where the entry of `key` lives."""
    return draw_cache.cache_dir() / f"coverage-{key}.json"


def load(key: str) -> CoverageModel | None:
    """The model stored under `key`, or None: not stored, or refused (then deleted with a
    one-line warning on standard error)."""
    return load_signed(entry_path(key), lambda path, secret: _read(path, key, secret),
                       cache="the coverage model's cache",
                       entry="the coverage model's cache entry", again="computing it again")


def _read(path: Path, key: str, secret: bytes) -> CoverageModel:
    payload = unseal(secret, read_regular(path, ENTRY_LIMIT), key.encode())
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        raise BadEntry("it is not JSON") from None
    return CoverageModel.from_json(data)


def store(key: str, model: CoverageModel) -> None:
    """Keep `model` under `key`, signed; left alone when it would not read back equal, when it
    is larger than `ENTRY_LIMIT`, or when the cache cannot be written."""
    data = model.to_json()
    payload = json.dumps(data, separators=(",", ":")).encode()
    if len(payload) + MAC_BYTES > ENTRY_LIMIT:
        return
    try:
        if CoverageModel.from_json(json.loads(payload)) != model:
            return
    except BadEntry:
        return
    folder = draw_cache.cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        secret = folder_key(folder)
    except UnusableKey as exc:
        _off(str(exc))
        return
    except OSError:  # a cache that cannot be written is left alone
        return
    with contextlib.suppress(OSError):
        write_atomic(entry_path(key), seal(secret, payload, key.encode()))


def _off(why: str) -> None:
    say_once("the coverage model's cache", why)
