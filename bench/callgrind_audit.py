"""Instructions per attach or cached read with the audit log on or off, counted by callgrind (B11, ADR 0095).

Usage (one side per process; valgrind's callgrind tool must be installed)::

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=OUT \\
        python bench/callgrind_audit.py {on,off} [--op {attach,read}] [--ops 200] [--dir PARENT]

The binder (SQLite metadata, local-disk blobs under ``--dir``, default the
temporary directory) is built and warmed with 30 attaches uninstrumented;
``callgrind_control -i on`` switches instrumentation on for exactly ``--ops``
calls of ``Run.produce_file`` (1 KiB, distinct content and name, as
``bench_audit.py``) and off again, so valgrind's ``Collected`` line divided by
``--ops`` is the instructions per attach. ``--op read`` counts ``--ops`` calls of
``Run.get_content`` of one ``docItem:`` reference whose parts are cached (as
``bench_audit.py``), after 30 uninstrumented ones; with the log on, the read
events of those calls and their batched appends are inside the count (a final
``flush`` included). Instruction counts do not depend on the machine's load,
unlike wall or CPU time.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess

import benchlib

from docbinder.domain.model import Principal

ALICE = Principal("alice", "acme")


def _instrument(state: str) -> None:
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=("on", "off"))
    parser.add_argument("--op", choices=("attach", "read"), default="attach")
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    benchlib.quiet_logs()
    with benchlib.temp_dir("callgrind-audit-", args.dir) as root:
        binder = benchlib.build(
            f"sqlite:///{root / 'docbinder.db'}",
            (root / "blobs").as_uri(),
            root,
            audit=args.side == "on",
        )
        run = binder.start_new_run(ALICE)

        def batch(count: int) -> None:
            for _ in range(count):
                token = secrets.token_hex(8)
                run.produce_file(
                    f"f-{token}.txt", secrets.token_bytes(1024), label=f"writeFile:{token}"
                )

        if args.op == "attach":
            batch(30)
            _instrument("on")
            batch(args.ops)
            _instrument("off")
        else:
            produced = run.produce_file("notes.txt", b"revenue grew 12% in the north\n" * 20)
            reference = f"docItem:{produced.document_id}"

            def reads(count: int) -> None:
                for _ in range(count):
                    content = run.get_content([reference])
                    assert content.documents, content.unresolved

            reads(30)
            binder.audit_log.flush()
            _instrument("on")
            reads(args.ops)
            binder.audit_log.flush()
            _instrument("off")
        binder.close()


if __name__ == "__main__":
    main()
