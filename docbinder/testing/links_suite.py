"""The LinkLedger and ResolutionLog contracts, run on memory, SQLite, PostgreSQL and MariaDB.

A concrete test class provides ``make_ledger()`` (a fresh, empty
:class:`~docbinder.ports.links.LinkLedger`) or ``make_log(per_workflow)`` (a fresh,
empty :class:`~docbinder.ports.resolutions.ResolutionLog`)::

    class TestMyLedger(LinkLedgerContract):
        @pytest.fixture
        def make_ledger(self):
            return MyLinkLedger

Needs ``pytest`` (``pip install -e '.[testing]'`` in a clone).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from docbinder.domain.resolutions import ResolutionMiss, ResolutionRecord
from docbinder.ports.links import LinkLedger
from docbinder.ports.resolutions import ResolutionLog

MakeLedger = Callable[[], LinkLedger]
MakeLog = Callable[[int], ResolutionLog]

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class LinkLedgerContract:
    """Behaviour every LinkLedger adapter must show."""

    @pytest.fixture
    def make_ledger(self) -> MakeLedger:
        """A factory of fresh, empty ledgers."""
        pytest.fail("a LinkLedgerContract subclass provides make_ledger")

    def test_revoke_is_recorded_once(self, make_ledger: MakeLedger) -> None:
        ledger = make_ledger()
        link = str(uuid.uuid4())
        assert ledger.is_revoked(link) is False
        assert ledger.revoke(link, NOW + timedelta(hours=1)) is True
        assert ledger.is_revoked(link) is True
        assert ledger.revoke(link, NOW + timedelta(hours=1)) is False
        assert ledger.is_revoked(str(uuid.uuid4())) is False

    def test_use_once_answers_true_only_the_first_time(self, make_ledger: MakeLedger) -> None:
        ledger = make_ledger()
        link = str(uuid.uuid4())
        assert ledger.use_once(link, NOW + timedelta(hours=1)) is True
        assert ledger.use_once(link, NOW + timedelta(hours=1)) is False
        assert ledger.is_revoked(link) is False  # used is not revoked
        assert ledger.use_once(str(uuid.uuid4()), NOW + timedelta(hours=1)) is True

    def test_concurrent_redemptions_of_one_link_let_exactly_one_through(
        self, make_ledger: MakeLedger
    ) -> None:
        ledger = make_ledger()
        link = str(uuid.uuid4())
        start = threading.Barrier(6)
        answers: list[bool] = []
        lock = threading.Lock()

        def redeem() -> None:
            start.wait()
            answer = ledger.use_once(link, NOW + timedelta(hours=1))
            with lock:
                answers.append(answer)

        threads = [threading.Thread(target=redeem) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(answers) == [False] * 5 + [True]

    def test_prune_drops_only_expired_marks(self, make_ledger: MakeLedger) -> None:
        ledger = make_ledger()
        old, fresh = str(uuid.uuid4()), str(uuid.uuid4())
        ledger.revoke(old, NOW - timedelta(seconds=1))
        ledger.revoke(fresh, NOW + timedelta(seconds=60))
        ledger.use_once(old, NOW - timedelta(seconds=1))
        assert ledger.prune(NOW) == 2
        assert ledger.is_revoked(old) is False
        assert ledger.is_revoked(fresh) is True
        assert ledger.prune(NOW) == 0

    def test_a_voucher_keeps_the_latest_expiry_of_its_signer(self, make_ledger: MakeLedger) -> None:
        ledger = make_ledger()
        holder, signer = uuid.uuid4().hex[:31], uuid.uuid4().hex
        assert ledger.vouched_until(holder, signer) is None
        ledger.vouch(holder, signer, NOW + timedelta(minutes=5))
        assert ledger.vouched_until(holder, signer) == NOW + timedelta(minutes=5)
        ledger.vouch(holder, signer, NOW + timedelta(minutes=1))  # an older token again
        assert ledger.vouched_until(holder, signer) == NOW + timedelta(minutes=5)
        ledger.vouch(holder, signer, NOW + timedelta(minutes=9))
        assert ledger.vouched_until(holder, signer) == NOW + timedelta(minutes=9)
        other = uuid.uuid4().hex[:31]
        assert ledger.vouched_until(other, signer) is None
        assert ledger.is_revoked(f"{holder}.{signer}") is False  # a voucher is no link mark

    def test_a_new_set_of_roles_forgets_the_holders_other_signers(
        self, make_ledger: MakeLedger
    ) -> None:
        ledger = make_ledger()
        holder, neighbour = uuid.uuid4().hex[:31], uuid.uuid4().hex[:31]
        member, guest = uuid.uuid4().hex, uuid.uuid4().hex
        ledger.vouch(holder, member, NOW + timedelta(minutes=5))
        ledger.vouch(neighbour, member, NOW + timedelta(minutes=5))
        ledger.vouch(holder, guest, NOW + timedelta(minutes=2))
        assert ledger.vouched_until(holder, member) is None
        assert ledger.vouched_until(holder, guest) == NOW + timedelta(minutes=2)
        assert ledger.vouched_until(neighbour, member) == NOW + timedelta(minutes=5)

    def test_prune_drops_vouchers_that_ran_out(self, make_ledger: MakeLedger) -> None:
        ledger = make_ledger()
        gone, kept = uuid.uuid4().hex[:31], uuid.uuid4().hex[:31]
        signer = uuid.uuid4().hex
        ledger.vouch(gone, signer, NOW - timedelta(seconds=1))
        ledger.vouch(kept, signer, NOW + timedelta(seconds=60))
        assert ledger.prune(NOW) == 1
        assert ledger.vouched_until(gone, signer) is None
        assert ledger.vouched_until(kept, signer) == NOW + timedelta(seconds=60)


def record(workflow_id: str, n: int, misses: int = 1) -> ResolutionRecord:
    """A record numbered ``n`` (its ``sent`` text) in ``workflow_id``."""
    return ResolutionRecord.bounded(
        workflow_id=workflow_id,
        at=NOW + timedelta(seconds=n),
        user_id="alice",
        sent=f'["docItem:{n}", "report ✓ {n}"]',
        resolved=[(f"docItem:{uuid.UUID(int=n)}", f"file-{n}.txt")],
        misses=[
            ResolutionMiss(f"miss-{n}-{i}", "not_in_workflow", "no such") for i in range(misses)
        ],
    )


class ResolutionLogContract:
    """Behaviour every ResolutionLog adapter must show."""

    @pytest.fixture
    def make_log(self) -> MakeLog:
        """``make_log(per_workflow)``: a fresh, empty log keeping that many per workflow."""
        pytest.fail("a ResolutionLogContract subclass provides make_log")

    def test_records_come_back_equal_newest_first(self, make_log: MakeLog) -> None:
        log = make_log(5)
        workflow = str(uuid.uuid4())
        kept = [record(workflow, n, misses=n % 3) for n in range(3)]
        for r in kept:
            log.record(r)
        assert log.recent(workflow, 10) == kept[::-1]
        assert log.recent(workflow, 2) == kept[:0:-1]
        assert log.recent(str(uuid.uuid4()), 10) == []

    def test_each_workflow_keeps_only_its_newest(self, make_log: MakeLog) -> None:
        log = make_log(3)
        busy, quiet = str(uuid.uuid4()), str(uuid.uuid4())
        log.record(record(quiet, 100))
        for n in range(7):
            log.record(record(busy, n))
        assert [r.sent for r in log.recent(busy, 10)] == [record(busy, n).sent for n in (6, 5, 4)]
        assert [r.sent for r in log.recent(quiet, 10)] == [record(quiet, 100).sent]

    def test_a_long_record_is_cut_to_its_bounds(self, make_log: MakeLog) -> None:
        log = make_log(2)
        workflow = str(uuid.uuid4())
        big = ResolutionRecord.bounded(
            workflow_id=workflow,
            at=NOW,
            user_id="alice",
            sent="docItem:" + "x" * 10_000,
            resolved=[],
            misses=[ResolutionMiss(f"m{i}", "rejected_input") for i in range(500)],
        )
        log.record(big)
        (back,) = log.recent(workflow, 1)
        assert back == big
        assert back.truncated is True
        assert len(back.sent) <= 2000
        assert len(back.misses) == 50
