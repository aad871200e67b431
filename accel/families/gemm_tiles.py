"""The tile choice of the GEMM family's specialised kernels (`fusionspec.accel.families.gemm`):
the work-group tiles of the tiled form (`choose_tiles`), the register block and the way A is read
in the register-blocked form (`choose_register_tiles`, `A_MODES`), and which of the two forms a
product takes on a device (`register_choice`).

The forms, and the measurements behind the defaults, are described in the docstring of
`fusionspec.accel.families.gemm`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fusionspec.spec.graph import Op

from ..codegen.access import INT_LIMIT
from ..errors import UnsupportedPartitionError
from .base import BuildContext
from .gemm_geometry import Geometry
from .stage import stages

__all__ = ["Tiles", "RegisterTiles", "choose_tiles", "choose_register_tiles", "register_blocked",
           "register_fits", "register_choice", "IM2COL_BUDGET", "PACK_BUDGET", "A_MODES",
           "WINDOW_BLOCK", "PLAIN_BLOCK", "FLOAT_BYTES"]

#: Bytes of one staged or packed element (f32).
FLOAT_BYTES = 4
#: The largest explicit im2col buffer (bytes); a larger A is read in place (implicit GEMM).
IM2COL_BUDGET = 64 << 20
#: The largest packed B (bytes) the register-blocked form makes; past it, the tiled form.
PACK_BUDGET = 1 << 30


@dataclass(frozen=True)
class Tiles:
    """Work-group shape (tx x ty work-items), register block (rm x rn) and K step (tk)."""

    tx: int
    ty: int
    rm: int
    rn: int
    tk: int

    @property
    def tm(self) -> int:
        return self.ty * self.rm

    @property
    def tn(self) -> int:
        return self.tx * self.rn

    @property
    def local_bytes(self) -> int:
        return self.tk * (self.tm + 1 + self.tn) * FLOAT_BYTES


def _side_class(extent: int) -> int:
    """The output tile extent for M or N: 1 for a single row or column (matrix-vector), 8 for
    a small extent, else 64. Few classes keep the programs few; a tile past the extent only
    costs idle work-items, which the bounds tests skip."""
    return 1 if extent <= 1 else 8 if extent <= 8 else 64


def choose_tiles(ctx: BuildContext, m: int, n: int, k: int) -> Tiles:
    """Tiles for an M x N x K product on `ctx.device`: up to 64 x 64 outputs per work-group
    (4 x 4 per work-item) and a K step of 16, shrunk to the size class of M and N and to what
    the device allows (work-group size, within `ctx.work_group_limit` when set; work-item
    sizes; half of its local memory). K does not matter: any K runs in steps of 16."""
    dev = ctx.device
    limit = ctx.max_work_group
    items = dev.max_work_item_sizes or (limit, limit)
    lim_x, lim_y = items[0], items[1] if len(items) > 1 else 1

    def side(extent: int) -> tuple[int, int]:  # (work-items, register block) along one dim
        tile = _side_class(extent)
        block = 4 if tile >= 32 else 2 if tile >= 4 else 1
        return tile // block, block

    (ty, rm), (tx, rn) = side(m), side(n)
    while tx * ty > limit or tx > lim_x or ty > lim_y:
        if (tx >= ty and tx > 1) or ty == 1:
            tx //= 2
        else:
            ty //= 2
    tk = 16  # a short K only leaves part of one step's loads masked
    budget = dev.local_mem_size // 2
    tiles = Tiles(tx, ty, rm, rn, tk)
    while tiles.local_bytes > budget and (tiles.tk > 1 or tiles.rm > 1 or tiles.rn > 1):
        if tiles.tk > 1:
            tiles = Tiles(tx, ty, tiles.rm, tiles.rn, tiles.tk // 2)
        else:
            tiles = Tiles(tx, ty, max(tiles.rm // 2, 1), max(tiles.rn // 2, 1), 1)
    if tiles.local_bytes > dev.local_mem_size:
        raise UnsupportedPartitionError(f"the device's {dev.local_mem_size} bytes of local "
                                        "memory cannot hold the smallest GEMM tile")
    return tiles


#: How the register-blocked kernel reads A (see `fusionspec.accel.families.gemm`).
A_MODES = ("run", "packed", "element")


@dataclass(frozen=True)
class RegisterTiles:
    """The register block of the CPU form: rm rows x nv vectors of `width` lanes per
    work-item, and how A is read: "run" (in place, one window decoding per run of k),
    "packed" (materialised first: an explicit im2col) or "element" (in place, the operand's
    full index code per element)."""

    rm: int
    nv: int
    width: int
    a_mode: str

    @property
    def nb(self) -> int:
        """Columns per panel (per work-item)."""
        return self.nv * self.width


def register_blocked(ctx: BuildContext) -> bool:
    """Whether `ctx`'s device gets the register-blocked form: its local memory is not a
    separate store (see `fusionspec.accel.families.gemm`)."""
    return not ctx.device.local_mem_dedicated


#: The default register blocks (rows, vectors): for A read in runs that carry a padding test
#: (convolution windows: every row also keeps an offset and a flag in registers), and for the
#: rest. Measured on PoCL (2-core AVX-512 machine, BENCHMARKS.md): the 3x3 convolution of the
#: benchmark ran 1.8 ms with 4 x 2 against 2.9 ms with 6 x 2, the 512^3 MatMul 1.9 ms with
#: 6 x 2 against 2.1 ms with 4 x 2; Intel's runtime ran every block within 5% of the others.
WINDOW_BLOCK = (4, 2)
PLAIN_BLOCK = (6, 2)


def _tuned_block(tuned: Mapping[str, Any], key: str, default: tuple[int, int]
                 ) -> tuple[int, int]:
    value = tuned.get(key)
    if isinstance(value, list | tuple) and len(value) == 2 and \
            all(isinstance(v, int) for v in value):
        return max(1, min(int(value[0]), 16)), max(1, min(int(value[1]), 4))
    return default


def choose_register_tiles(ctx: BuildContext, geo: Geometry, folded_a: bool) -> RegisterTiles:
    """The register block for `geo` on `ctx.device` (see `fusionspec.accel.families.gemm`).

    A is read in runs where the geometry allows it and no op is folded into its loads
    (`folded_a`); else materialised when its index code decodes or tests anything and the
    buffer fits `IM2COL_BUDGET`; else element by element. The block is `WINDOW_BLOCK` for runs
    with a padding test, `PLAIN_BLOCK` otherwise, whatever M, N and K (one program per
    structure: a narrow N only leaves lanes idle). The tuning cache may replace each
    (``block``, ``window_block``: [rows, vectors]; ``a_mode``)."""
    width = ctx.device.vector_width
    tuned = ctx.tuned("gemm")
    fits = geo.z * (geo.m + 16) * geo.k * FLOAT_BYTES <= IM2COL_BUDGET
    allowed = {"run": geo.a_run is not None and not folded_a, "packed": fits, "element": True}
    wanted = tuned.get("a_mode")
    decodes = bool(geo.a.statements or geo.a.valid)
    if isinstance(wanted, str) and allowed.get(wanted):
        mode = wanted
    else:
        mode = "run" if allowed["run"] else "packed" if decodes and fits else "element"
    if mode == "run" and geo.a.valid:
        rm, nv = _tuned_block(tuned, "window_block", WINDOW_BLOCK)
    else:
        rm, nv = _tuned_block(tuned, "block", PLAIN_BLOCK)
    return RegisterTiles(rm, nv, width, mode)


def register_fits(geo: Geometry, tiles: RegisterTiles) -> bool:
    """Whether the packed operands of the register-blocked form stay within ``int`` indexing
    and `PACK_BUDGET` (the tiled form, which packs nothing, takes the rest)."""
    packed_b = geo.z * -(-geo.n // tiles.nb) * tiles.nb * geo.k
    packed_a = geo.z * -(-geo.m // tiles.rm) * tiles.rm * geo.k \
        if tiles.a_mode == "packed" else 0
    return max(packed_a, packed_b) <= INT_LIMIT and packed_b * FLOAT_BYTES <= PACK_BUDGET


def register_choice(ctx: BuildContext, geo: Geometry, chains: list[list[Op]]
                    ) -> tuple[RegisterTiles | None, bool]:
    """The register block of the register-blocked form (None: the tiled form) and whether A's
    folded Dequantize is staged by the packing launch (`fusionspec.accel.families.stage`),
    where A can then be read in runs."""
    if not register_blocked(ctx):
        return None, False
    register = choose_register_tiles(ctx, geo, bool(chains[0]))
    stage = False
    if chains[0] and geo.k and geo.m and geo.n and geo.z:
        unfolded = choose_register_tiles(ctx, geo, False)
        if unfolded.a_mode == "run" and register_fits(geo, unfolded) and \
                stages(chains[0]):
            register, stage = unfolded, True
    return (register if register_fits(geo, register) else None), stage

