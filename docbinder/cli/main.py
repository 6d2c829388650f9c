"""``docbinder``: the command line (SPEC C15).

Every command takes ``--json`` (one JSON document on stdout, camelCase keys
from the wire converter). Bad input gives one ``error: ...`` line on stderr and
exit code 1 (2 for usage errors), never a traceback, and writes nothing.

This module assembles the command tree: :data:`app` (the global options, in
:mod:`~docbinder.cli.app`) with one module per command or group, registered
here in the order ``docbinder --help`` lists them. The command modules share
only :mod:`~docbinder.cli.state`, :mod:`~docbinder.cli.common`,
:mod:`~docbinder.cli.inputs`, :mod:`~docbinder.cli.render` and
:mod:`~docbinder.cli.output`; none imports another command module or this one.
"""

from __future__ import annotations

from docbinder.cli import (
    attach,
    audit,
    demo,
    doctor,
    files,
    gc,
    harvest,
    quota,
    resolve,
    retention,
    serve,
    store,
    workflow,
)
from docbinder.cli import run as run
from docbinder.cli.app import (
    app,
    audit_app,
    files_app,
    quota_app,
    retention_app,
    store_app,
    workflow_app,
)

app.command()(demo.demo)
app.command()(attach.attach)
app.command()(resolve.resolve)
app.command()(harvest.harvest)
app.command()(harvest.materialize)
app.command()(gc.gc)
app.command()(store.migrate)
app.command()(doctor.doctor)
app.command()(serve.mcp)
app.command()(serve.serve)

workflow_app.command("new")(workflow.workflow_new)
workflow_app.command("show")(workflow.workflow_show)
workflow_app.command("advance")(workflow.workflow_advance)
workflow_app.command("ls")(workflow.workflow_ls)

files_app.command("ls")(files.files_ls)
files_app.command("show")(files.files_show)
files_app.command("cat")(files.files_cat)
files_app.command("rm")(files.files_rm)
files_app.command("link")(files.files_link)

store_app.command("adopt")(store.store_adopt)
store_app.command("claim")(store.store_claim)

quota_app.command("set")(quota.quota_set)
quota_app.command("show")(quota.quota_show)
quota_app.command("rm")(quota.quota_rm)

audit_app.command("ls")(audit.audit_ls)
audit_app.command("export")(audit.audit_export)
audit_app.command("verify")(audit.audit_verify)
audit_app.command("head")(audit.audit_head)
audit_app.command("prune")(audit.audit_prune)

retention_app.command("set")(retention.retention_set)
retention_app.command("show")(retention.retention_show)
retention_app.command("rm")(retention.retention_rm)
retention_app.command("hold")(retention.retention_hold)
retention_app.command("release")(retention.retention_release)

__all__ = ["app", "run"]
