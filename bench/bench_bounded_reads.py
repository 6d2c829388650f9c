"""The inputs of issue 31 (kinds 1, 2, 4) replayed against the bounded read path.

Usage::

    python bench/bench_bounded_reads.py [--pairs 20] [--out FILE]

A binder over SQLite metadata and local-disk blobs in a temp directory (the
embedded default, extraction cache in the same database), with short budgets
so the run takes about two minutes: ``extract_time_budget`` 5 s and
``call_time_budget`` 12 s. Measured:

* **slow .docx** (20,000 paragraphs, ~40 KB; mammoth needs far more than 5 s):
  the first ``get_content`` (runs out of its budget) and the second (the
  truncated outcome from the cache);
* **three concurrent reads** of three such documents: the most converter
  processes seen alive at once (sampled every 10 ms) and the wall time;
* **150 references** to one 2.8 MB PNG (OCR off, as the issue's server had
  none): extractions, bytes in the ``read_documents`` answer's parts;
* **search over 4 slow PDFs** (30 pages sharing one 2 MB content stream):
  wall time of three ``search_in_file_content`` calls, their matches and how
  many files each did not search wholly;
* **cross-tenant timing**: ``--pairs`` new tenants each read their copy of
  bytes tenant A had read and bytes nobody read, in random order; medians, and
  how often the "known" read was the faster one (a coin: about half).
"""

from __future__ import annotations

import argparse
import base64
import functools
import io
import random
import threading
import time
import uuid
from typing import Any

import benchlib

from tests import documents  # benchlib puts the repository root on sys.path
from tests.converter_watch import ConverterWatch


def _png(size: int = 2_800_000) -> bytes:
    from PIL import Image

    side = int((size / 3) ** 0.5)
    image = Image.frombytes("RGB", (side, side), random.Random(7).randbytes(side * side * 3))
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=0)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    benchlib.quiet_logs()
    from docbinder.domain.model import Principal
    from docbinder.toolset import DocbinderToolset

    report: dict[str, Any] = {"machine": benchlib.machine_facts()}
    alice = Principal("alice", "m1", None, roles=("member",))
    with benchlib.temp_dir("docbinder-bench-bounded-") as home:
        binder = benchlib.build(
            f"sqlite:///{home}/db.sqlite",
            f"file://{home}/blobs",
            home,
            extract_time_budget=5.0,
            call_time_budget=12.0,
        )
        run = binder.start_new_run(alice)
        run.get_content([run.produce_file("warm.docx", documents.docx_bytes()).reference])

        # kind 1: the slow .docx, twice
        ref = run.produce_file("slow.docx", documents.slow_docx()).reference
        first = benchlib.timed(lambda: run.get_content([ref]))
        second = benchlib.timed(lambda: run.get_content([ref]))
        report["slow_docx"] = {"first_s": round(first, 2), "second_ms": round(second * 1000, 2)}
        benchlib.note(f"slow .docx: first {first:.2f} s, second {second * 1000:.2f} ms")

        # kind 1: three concurrent reads
        refs = [
            run.produce_file(f"slow-{n}.docx", documents.slow_docx(20_001 + n)).reference
            for n in range(3)
        ]
        workflow = run.context.workflow_id

        def read(one: str) -> None:
            binder.start_run(alice, workflow).get_content([one])

        started = time.perf_counter()
        with ConverterWatch() as peak:
            threads = [threading.Thread(target=read, args=(one,)) for one in refs]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        wall = time.perf_counter() - started
        report["three_concurrent"] = {"peak_processes": peak.most, "wall_s": round(wall, 2)}
        benchlib.note(f"three concurrent reads: peak {peak.most} processes, {wall:.2f} s")

        # kind 2: 150 references to one PNG
        plain = benchlib.build(
            f"sqlite:///{home}/db2.sqlite", f"file://{home}/blobs2", home, call_time_budget=60.0
        )
        plain_run = plain.start_new_run(alice)
        picture = _png()
        toolset = DocbinderToolset(plain_run)
        written = [
            toolset.call(
                "write_file",
                {
                    "name": f"scan-{n}.png",
                    "content": base64.b64encode(picture).decode(),
                    "encoding": "base64",
                },
            )
            for n in range(150)
        ]
        doc_refs = [str(w.structured["files"][0]["documentRef"]) for w in written]
        started = time.perf_counter()
        answer = toolset.call("read_documents", {"documentList": doc_refs})
        took = time.perf_counter() - started
        sent = sum(len(p.data or b"") + len(p.text or "") for p in answer.parts)
        report["png_150"] = {
            "png_bytes": len(picture),
            "answer_part_bytes": sent,
            "answer_parts": len(answer.parts),
            "seconds": round(took, 2),
        }
        benchlib.note(f"150 references: {len(answer.parts)} parts, {sent} bytes, {took:.2f} s")
        plain.close()

        # kind 2: search over 4 slow PDFs
        pdf = documents.shared_stream_pdf(pages=30, stream_repeats=40_000)
        ids = [run.produce_file(f"{n}.pdf", pdf + b"%" + bytes([48 + n])).item.id for n in range(4)]
        search = DocbinderToolset(run)
        calls = []
        for _ in range(3):
            started = time.perf_counter()
            result = search.call("search_in_file_content", {"query": "shared", "file_ids": ids})
            calls.append(
                {
                    "seconds": round(time.perf_counter() - started, 2),
                    "matches": len(result.structured["matches"]),
                    "unsearched": len(result.structured["unsearched"]),
                }
            )
        report["search_4_pdfs"] = calls
        benchlib.note(f"search over 4 slow PDFs: {calls}")

        # kind 4: cross-tenant timing
        known = documents.html_page("k" * 32)
        run.get_content([run.produce_file("known.html", known).reference])
        rng = random.Random(31)
        knowns, freshes, faster = [], [], 0
        for pair in range(args.pairs):
            tenant = Principal(f"t{pair}", f"tenant-{pair}", None, roles=("member",))
            other = binder.start_new_run(tenant)
            refs2 = {
                "known": other.produce_file("a.html", known).reference,
                "fresh": other.produce_file(
                    "b.html", documents.html_page(uuid.uuid4().hex)
                ).reference,
            }
            times: dict[str, float] = {}
            for name in rng.sample(sorted(refs2), 2):
                times[name] = benchlib.timed(functools.partial(other.get_content, [refs2[name]]))
            knowns.append(times["known"] * 1000)
            freshes.append(times["fresh"] * 1000)
            faster += times["known"] < times["fresh"]
        report["cross_tenant"] = {
            "pairs": args.pairs,
            "known_ms": benchlib.summary(knowns),
            "fresh_ms": benchlib.summary(freshes),
            "known_faster": faster,
        }
        benchlib.note(
            f"cross-tenant: known {benchlib.median(knowns):.1f} ms, fresh "
            f"{benchlib.median(freshes):.1f} ms (medians), known faster in {faster}/{args.pairs}"
        )
        binder.close()
    benchlib.emit(report, args.out)


if __name__ == "__main__":
    main()
