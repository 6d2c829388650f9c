"""The extraction cache: first and second ``get_content`` of a 20-page PDF and a 5-sheet .xlsx.

Usage::

    python bench/bench_extract_cache.py [--runs 5] [--out FILE]

A binder over SQLite metadata and local-disk blobs in a temp directory (the
embedded default, cache table ``extraction_cache`` in the same database).
Each run produces fresh documents (a run number in their text makes new
bytes, so the first read is a cache miss): a 20-page PDF (a Flate-compressed
content stream of 50 lines of about 90 characters per page, a report page) and a 5-sheet workbook (openpyxl,
400 rows x 6 columns per sheet). Timed: the first ``run.get_content`` (the
conversion in a child process plus storing the entry) and the second (a
cache hit). Target: second at least 20x faster than the first.

Also timed, without a cache, one conversion of each document in the calling
thread (``isolate=False``) and in a converter process (``isolate=True``):
the price of isolation recorded in ADR 0019. Figures are medians over runs.
"""

from __future__ import annotations

import argparse
import io
import zlib
from datetime import UTC, datetime
from typing import Any

import benchlib

from tests.documents import pdf_document  # benchlib puts the repository root on sys.path

TARGET = 20.0


def pdf_bytes(pages: int, run: int) -> bytes:
    """A PDF of ``pages`` pages with 50 lines of text each (ISO 32000-1 §7.3.8, §7.5)."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(pages))
        + b"] /Count %d >>" % pages,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for page in range(pages):
        lines = b"".join(
            b"BT /F1 9 Tf 30 %d Td (Run %d page %d line %d: quarterly revenue, costs and margin "
            b"by region and product line) Tj ET\n" % (770 - 15 * n, run, page + 1, n + 1)
            for n in range(50)
        )
        stream = zlib.compress(lines)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * page)
        )
        objects.append(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream)
        )
    return pdf_document(objects)


def xlsx_bytes(sheets: int, rows: int, run: int) -> bytes:
    """A workbook of ``sheets`` sheets with a header and ``rows`` rows of 6 cells (openpyxl)."""
    from openpyxl import Workbook

    book = Workbook()
    for index in range(sheets):
        sheet = book.active if index == 0 else book.create_sheet()
        assert sheet is not None
        sheet.title = f"Region {index + 1}"
        sheet.append(["Run", "Item", "Units", "Price", "Total", "Note"])
        for row in range(rows):
            sheet.append([run, f"item {row}", row % 17, 9.5, (row % 17) * 9.5, "ok"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5 (figures are medians)")
    benchlib.quiet_logs()

    from docbinder.adapters.extract import DefaultContentExtractor
    from docbinder.domain.model import EMPTY_SHA256, FileItem, Principal, Scope

    principal = Principal("bench", "m1", "f1", roles=("member",))
    documents: dict[str, Any] = {
        "pdf_20_pages": lambda run: ("report.pdf", pdf_bytes(20, run)),
        "xlsx_5_sheets": lambda run: ("table.xlsx", xlsx_bytes(5, 400, run)),
    }
    timings: dict[str, dict[str, list[float]]] = {
        name: {"first": [], "second": [], "inline": [], "isolated": []} for name in documents
    }
    sizes: dict[str, int] = {}
    with benchlib.temp_dir("docbinder-bench-extract-") as home:
        binder = benchlib.build(f"sqlite:///{home / 'meta.db'}", f"file://{home / 'blobs'}", home)
        run_ctx = binder.start_new_run(principal)
        # Warm the converter process server once (paid by the first document of a process).
        warm_name, warm_data = documents["pdf_20_pages"](-1)
        run_ctx.get_content([run_ctx.produce_file(warm_name, warm_data).reference])
        inline = DefaultContentExtractor(isolate=False)
        isolated = DefaultContentExtractor(isolate=True)
        for run in range(args.runs):
            for name, make in documents.items():
                file_name, data = make(run)
                sizes[name] = len(data)
                ref = run_ctx.produce_file(file_name, data).reference
                first = benchlib.timed(lambda ref=ref: run_ctx.get_content([ref]))
                second = benchlib.timed(lambda ref=ref: run_ctx.get_content([ref]))
                parts = run_ctx.get_content([ref]).parts
                assert len(parts) == (20 if name.startswith("pdf") else 5), parts
                timings[name]["first"].append(first)
                timings[name]["second"].append(second)
                mime = (
                    "application/pdf"
                    if name.startswith("pdf")
                    else ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
                )
                item = FileItem(
                    id="bench",
                    file_name=file_name,
                    mime_type=mime,
                    size=len(data),
                    sha256=EMPTY_SHA256,
                    created_by="bench",
                    scope=Scope("m1", "f1"),
                    created_at=datetime.now(UTC),
                    blob_key="bench",
                )
                for label, extractor in (("inline", inline), ("isolated", isolated)):
                    timings[name][label].append(
                        benchlib.timed(
                            lambda e=extractor, i=item, d=data: e.extract("bench", i, iter([d]))
                        )
                    )
    results: dict[str, Any] = {}
    rows = []
    for name, series in timings.items():
        ratios = [f / s for f, s in zip(series["first"], series["second"], strict=True)]
        entry = {key: benchlib.summary(values, 5) for key, values in series.items()}
        entry["speedup_second_vs_first"] = benchlib.summary(ratios, 1)
        entry["isolation_overhead_s"] = round(
            benchlib.median(series["isolated"]) - benchlib.median(series["inline"]), 4
        )
        entry["bytes"] = sizes[name]
        entry["target_met"] = benchlib.median(ratios) >= TARGET
        results[name] = entry
        rows.append(
            [
                name,
                sizes[name],
                f"{benchlib.median(series['first']) * 1000:.1f}",
                f"{benchlib.median(series['second']) * 1000:.2f}",
                f"{benchlib.median(ratios):.0f}x",
                f"{benchlib.median(series['inline']) * 1000:.1f}",
                f"{benchlib.median(series['isolated']) * 1000:.1f}",
            ]
        )
    benchlib.note(
        benchlib.table(
            ["document", "bytes", "first ms", "second ms", "speed-up", "inline ms", "isolated ms"],
            rows,
        )
    )
    benchlib.emit(
        {
            "benchmark": "bench_extract_cache",
            "machine": benchlib.machine_facts(),
            "runs": args.runs,
            "target_speedup": TARGET,
            "results": results,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
