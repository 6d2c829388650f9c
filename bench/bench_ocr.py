"""OCR of scans: first ``get_content`` (render + recognize) and second (the extraction cache).

Usage::

    python bench/bench_ocr.py [--runs 5] [--out FILE]

A binder over SQLite metadata and local-disk blobs in a temp directory. Each
run makes fresh scans (the run number is drawn on every page, so the first
read misses the cache): a one-page invoice scanned to PDF, a 10-page scan and
the invoice page as PNG (A4 at 150 dpi, drawn with Pillow; PDF pages are
rendered at 300 dpi for OCR). Timed: the first ``run.get_content`` (converter
process, page rendering, Tesseract) and the second (a cache hit). Figures are
medians over runs; "per page" is the first read divided by the pages read.
The OCR extra and Tesseract's English data must be installed (ADR 0064).
"""

from __future__ import annotations

import argparse
import io
from typing import Any

import benchlib

from tests import documents  # benchlib puts the repository root on sys.path


def scans(run: int) -> dict[str, tuple[str, bytes, int]]:
    """The documents of one run: name -> (file name, bytes, pages)."""
    lines = (*documents.INVOICE_LINES, f"Benchmark run {run}")
    page = documents.scanned_page(lines)
    one = io.BytesIO()
    page.save(one, "PDF", resolution=150)
    ten = io.BytesIO()
    pages = [documents.scanned_page((*lines, f"Page {n} of 10")) for n in range(1, 11)]
    pages[0].save(ten, "PDF", resolution=150, save_all=True, append_images=pages[1:])
    return {
        "invoice_scan_pdf_1_page": ("invoice-scan.pdf", one.getvalue(), 1),
        "scan_pdf_10_pages": ("archive-scan.pdf", ten.getvalue(), 10),
        "invoice_png": ("invoice.png", documents.png(page), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5 (figures are medians)")
    benchlib.quiet_logs()

    from docbinder.adapters.extract import DefaultContentExtractor
    from docbinder.domain.model import Principal

    problem = DefaultContentExtractor().ocr_problem("pdf")
    if problem is not None:
        parser.error(problem)
    principal = Principal("bench", "m1", "f1", roles=("member",))
    timings: dict[str, dict[str, list[float]]] = {}
    pages: dict[str, int] = {}
    with benchlib.temp_dir("docbinder-bench-ocr-") as home:
        binder = benchlib.build(f"sqlite:///{home / 'meta.db'}", f"file://{home / 'blobs'}", home)
        run_ctx = binder.start_new_run(principal)
        warm = scans(-1)["invoice_png"]  # the converter process server, once per process
        run_ctx.get_content([run_ctx.produce_file(warm[0], warm[1]).reference])
        for run in range(args.runs):
            for name, (file_name, data, count) in scans(run).items():
                pages[name] = count
                ref = run_ctx.produce_file(file_name, data).reference
                first = benchlib.timed(lambda ref=ref: run_ctx.get_content([ref]))
                second = benchlib.timed(lambda ref=ref: run_ctx.get_content([ref]))
                parts = run_ctx.get_content([ref]).parts
                read = [p for p in parts if p.ocr]
                assert len(read) == count, parts
                assert all(f"Benchmark run {run}" in (p.text or "") for p in read), read
                series = timings.setdefault(name, {"first": [], "second": []})
                series["first"].append(first)
                series["second"].append(second)
    results: dict[str, Any] = {}
    rows = []
    for name, series in timings.items():
        first, second = benchlib.median(series["first"]), benchlib.median(series["second"])
        results[name] = {
            "pages": pages[name],
            "first_s": benchlib.summary(series["first"], 4),
            "second_s": benchlib.summary(series["second"], 5),
            "per_page_s": round(first / pages[name], 4),
        }
        rows.append(
            [
                name,
                pages[name],
                f"{first * 1000:.0f}",
                f"{first / pages[name] * 1000:.0f}",
                f"{second * 1000:.2f}",
                f"{first / second:.0f}x",
            ]
        )
    benchlib.note(
        benchlib.table(
            ["document", "pages", "first ms", "per page ms", "second ms", "speed-up"], rows
        )
    )
    benchlib.emit(
        {
            "benchmark": "bench_ocr",
            "machine": benchlib.machine_facts(),
            "runs": args.runs,
            "results": results,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
