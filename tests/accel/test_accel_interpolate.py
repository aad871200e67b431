"""The interpolate family of the OpenCL backend: nearest and (bi/tri)linear, half_pixel and
align_corners, up- and down-scaling by sizes, scales or a sizes input, NCX and NXC, and
fp.interpolate_post_ops, checked against the reference; and the conformance suite on
fp.interpolate_post_ops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.families import family_for
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("kernel_form")]

F32, BF16, S32 = DataType.f32, DataType.bf16, DataType.s32


def _feeds(graph: Graph) -> dict[int, Any]:
    rng = np.random.default_rng(11)
    g = graph.finalize()
    return {t.id: cast_to(3 * rng.standard_normal(t.shape or ()), t.dtype)
            for t in g.input_tensors if not t.dtype.is_integer}


def _interp(shape: tuple[int, ...], attrs: dict[str, AttrValue], dtype: DataType = F32
            ) -> Graph:
    src, dst = LogicalTensor(0, dtype, shape), LogicalTensor(1, dtype, None)
    return Graph([Op(0, "Interpolate", inputs=(src,), outputs=(dst,), attrs=attrs)])


CASES: list[tuple[tuple[int, ...], dict[str, AttrValue]]] = [
    ((1, 2, 5), {"mode": "nearest", "sizes": [9], "data_format": "NCX"}),
    ((2, 3, 4, 5), {"mode": "nearest", "scales": [1.5, 0.5], "data_format": "NCX"}),
    ((2, 4, 5, 3), {"mode": "nearest", "sizes": [7, 2], "data_format": "NXC",
                    "coordinate_transformation_mode": "align_corners"}),
    ((1, 2, 5), {"mode": "linear", "sizes": [11], "data_format": "NCX"}),
    ((2, 3, 4, 5), {"mode": "bilinear", "sizes": [7, 3], "data_format": "NCX"}),
    ((2, 4, 5, 3), {"mode": "bilinear", "scales": [2.0, 1.5], "data_format": "NXC",
                    "coordinate_transformation_mode": "align_corners"}),
    ((1, 3, 4, 2, 2), {"mode": "trilinear", "sizes": [6, 3, 1], "data_format": "NCX"}),
]


@pytest.mark.parametrize("shape,attrs", CASES)
def test_interpolate_matches_reference(shape: tuple[int, ...],
                                       attrs: dict[str, AttrValue]) -> None:
    graph = _interp(shape, attrs)
    on = OnDevice(graph)
    assert family_for(on.parts[0]).name == "interpolate", "Interpolate -> interpolate family"
    on.check(_feeds(graph), label=f"Interpolate {shape} {attrs}")


def test_bf16_and_sizes_input() -> None:
    graph = _interp((1, 2, 3, 4), {"mode": "linear", "sizes": [5, 6], "data_format": "NCX"},
                    BF16)
    OnDevice(graph).check(_feeds(graph), label="Interpolate bf16")
    src, sizes = LogicalTensor(0, F32, (1, 2, 3, 4)), LogicalTensor(2, S32, (2,))
    dst = LogicalTensor(1, F32, (1, 2, 6, 2))
    graph = Graph([Op(0, "Interpolate", inputs=(src, sizes), outputs=(dst,),
                      attrs={"mode": "bilinear", "data_format": "NCX"})])
    feeds = {**_feeds(graph), 2: np.array([6, 2], dtype=np.int32)}
    OnDevice(graph).check(feeds, label="Interpolate with a sizes input")


def test_post_ops() -> None:
    src, r = LogicalTensor(0, F32, (1, 3, 4, 4)), LogicalTensor(1, F32, None)
    b, y, z = LogicalTensor(2, F32, (1, 3, 1, 1)), LogicalTensor(3, F32, None), \
        LogicalTensor(4, F32, None)
    graph = Graph([Op(0, "Interpolate", inputs=(src,), outputs=(r,),
                      attrs={"mode": "bilinear", "sizes": [8, 6], "data_format": "NCX"}),
                   Op(1, "Add", inputs=(r, b), outputs=(y,)),
                   Op(2, "Sigmoid", inputs=(y,), outputs=(z,))])
    on = OnDevice(graph)
    assert len(on.parts) == 1 and on.parts[0].pattern == "fp.interpolate_post_ops", \
        f"Interpolate + 2 post-ops is one partition ({on.parts[0].pattern})"
    on.check(_feeds(graph), label="fp.interpolate_post_ops")
