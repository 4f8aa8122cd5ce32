# SPDX-License-Identifier: BSD-3-Clause
"""The element types of a job, one table row each.

Everything the package does with a dtype (its wire code, element size, the buffer-protocol
formats and the torch dtype it accepts) is looked up here, so that a new wire dtype is one
more row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class DType:
    """One element type.

    Attributes:
        name: the table's and georeduce-worker's name ("fp32").
        code: the value of enum gr_dtype and of the wire header's dtype field.
        size: bytes per element of the caller's buffer (gr_dtype_size()).
        formats: buffer-protocol format characters taken as this type (struct module
            codes, native or little-endian). Raw byte buffers ("B", "b", "c") are taken
            for every type, as little-endian elements.
        torch: the name of the torch dtype of the caller's tensor (an attribute of the
            torch module).
        wire: how the elements travel: "element" (as in the buffer), or "mx" (OCP
            microscaling blocks of 32, encoded and decoded by libgeoreduce: the caller
            holds fp32).
    """

    name: str
    code: int
    size: int
    formats: Tuple[str, ...]
    torch: Optional[str]
    wire: str = "element"


DTYPES: Tuple[DType, ...] = (
    DType("fp32", 1, 4, ("f",), "float32"),
    # "H": the bits of a half-precision value held as uint16 (numpy has no bfloat16).
    DType("fp16", 2, 2, ("e", "H"), "float16"),
    DType("bf16", 3, 2, ("H",), "bfloat16"),
    # OCP microscaling: the caller's tensor is fp32, quantised on the wire.
    DType("mxint8", 4, 4, ("f",), "float32", "mx"),
    DType("mxfp8", 5, 4, ("f",), "float32", "mx"),
    DType("mxfp4", 6, 4, ("f",), "float32", "mx"),
)

RAW_FORMATS: Tuple[str, ...] = ("B", "b", "c")

BY_NAME: Dict[str, DType] = {d.name: d for d in DTYPES}
BY_CODE: Dict[int, DType] = {d.code: d for d in DTYPES}
# The element type of each torch dtype (the MX types share fp32's).
BY_TORCH: Dict[str, DType] = {d.torch: d for d in DTYPES
                              if d.torch is not None and d.wire == "element"}


def by_code(code: int) -> DType:
    """The row of a gr_dtype value; ValueError for an unknown one."""
    try:
        return BY_CODE[code]
    except KeyError:
        raise ValueError("dtype code %d: this package knows %s" % (
            code, ", ".join("%s (%d)" % (d.name, d.code) for d in DTYPES))) from None


def by_name(name: str) -> DType:
    """The row of a dtype name; ValueError for an unknown one."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError("dtype %r: one of %s" % (name, ", ".join(BY_NAME))) from None
