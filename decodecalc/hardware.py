"""Accelerators: what decode needs to know about them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator (per device, not per board or system).

    Bandwidth is the vendor's peak in bytes/s (decimal units, as datasheets quote it);
    memory is in bytes, binary, because HBM is sold that way (an "80GB" H100 holds 80 GiB).
    """

    id: str
    name: str
    vendor: str
    bandwidth_bytes_per_s: int
    memory_bytes: int
    memory_kind: str
    aliases: tuple[str, ...] = ()
    notes: str = ""
    source: str = ""
