"""serving's CSV: the one-pool server's and the disaggregated pools' rows lead with the
same input columns, so both modes' files stack and each row says what was served."""

from __future__ import annotations

import csv
import io

from tests.conftest import Run

SERVING = [
    "serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1000",
    "--output-len", "100", "--concurrency", "1,64", "-f", "csv",
]  # fmt: skip


def _rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    return list(reader.fieldnames or ()), rows


def test_both_modes_lead_with_the_same_inputs(cli: Run) -> None:
    one = cli(*SERVING)
    pools = cli(*SERVING, "--prefill-workers", "1", "--decode-workers", "1")
    assert one.code == 0 and pools.code == 0, pools.err
    one_header, _ = _rows(one.out)
    pools_header, rows = _rows(pools.out)
    lead = one_header[: one_header.index("output_len") + 1]
    assert pools_header[: len(lead)] == lead
    # What was served, on every row: the inputs asked for, not the tool's figures.
    for row in rows:
        assert (row["model"], row["gpu"], row["weights_dtype"], row["tp"]) == (
            "llama-3.1-8b",
            "h100-sxm",
            "bf16",
            "1",
        )
        assert (row["input_len"], row["output_len"]) == ("1000", "100")
    assert "prefill_workers" in pools_header[len(lead) :]
