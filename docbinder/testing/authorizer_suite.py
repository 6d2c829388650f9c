"""Contract every :class:`~docbinder.ports.authorizer.Authorizer` must satisfy (SPEC C11).

Subclass :class:`AuthorizerContract` once per adapter and provide an
``authorizer`` fixture; pytest then runs every test below against it. The
rules checked are those of the default role table
(:mod:`docbinder.adapters.rbac.roletable`):

1. nothing crosses mandates, not even for ``admin``;
2. ``admin`` may do everything in its own mandate, in every feature instance;
3. a resource of feature instance F is visible only to principals working in F
   (a principal without a feature instance does not see it unless admin);
   mandate-level resources are visible in every feature instance of the mandate;
4. ``viewer`` reads; ``member`` reads and creates, and updates or deletes only
   what it owns; unknown roles and an empty role list grant nothing.

The property test checks that an adapter gives exactly the role table's answer
for random principals, actions and resources: for the Casbin adapter this is the
proof that the shipped model and policy mean the same as the role table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docbinder.adapters.rbac.roletable import RoleTableAuthorizer
from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.model import Principal, Scope
from docbinder.ports.authorizer import Authorizer

M1 = "mandate-1"
M2 = "mandate-2"
M3 = "mandate-3"
FI1 = "fi-1"
FI2 = "fi-2"
ALICE = "alice"
BOB = "bob"
CAROL = "carol"

KINDS = list(ResourceKind)
ACTIONS = list(Action)
WRITES = [Action.UPDATE, Action.DELETE]


def principal(
    *roles: str, fi: str | None = None, mandate: str = M1, user: str = ALICE
) -> Principal:
    """A principal ``user`` in ``mandate`` / feature instance ``fi`` with ``roles``."""
    return Principal(user, mandate, fi, roles)


def resource(
    kind: ResourceKind, *, fi: str | None = None, mandate: str = M1, owner: str = BOB
) -> Resource:
    """A resource of ``kind`` in ``mandate`` / ``fi`` owned by ``owner`` (default: not Alice)."""
    return Resource(kind, Scope(mandate, fi), owner, "res-1")


def spec_oracle(who: Principal, action: Action, what: Resource) -> bool:
    """The access rules written straight from the role table's documented rules.

    Kept independent of every adapter so that the property test can fail for
    the role table itself.
    """
    if who.mandate_id != what.scope.mandate_id:
        return False
    if "admin" in who.roles:
        return True
    fi = what.scope.feature_instance_id
    if fi is not None and fi != who.feature_instance_id:
        return False
    owns = what.owner_id == who.user_id
    if "member" in who.roles and (action in (Action.READ, Action.CREATE) or owns):
        return True
    return "viewer" in who.roles and action is Action.READ


MANDATES = [M1, M2, M3]
FEATURE_INSTANCES: list[str | None] = [None, FI1, FI2]
USERS = [ALICE, BOB, CAROL]
ROLE_NAMES = ["viewer", "member", "admin", "other"]

principals = st.builds(
    Principal,
    user_id=st.sampled_from(USERS),
    mandate_id=st.sampled_from(MANDATES),
    feature_instance_id=st.sampled_from(FEATURE_INSTANCES),
    roles=st.lists(st.sampled_from(ROLE_NAMES), max_size=4).map(tuple),
)
"""Random principals: 3 mandates x {no, f1, f2} feature instance x role lists."""


@st.composite
def requests(draw: st.DrawFn) -> tuple[Principal, Action, Resource]:
    """A random ``(principal, action, resource)``.

    The resource's mandate, feature instance and owner are drawn either from the
    principal's own values or from all values, so that the interesting case
    (same mandate, same or other feature instance, own or other resource) is
    common instead of one in many.
    """
    who = draw(principals)
    mandate = draw(st.one_of(st.just(who.mandate_id), st.sampled_from(MANDATES)))
    fi = draw(st.one_of(st.just(who.feature_instance_id), st.sampled_from(FEATURE_INSTANCES)))
    owner = draw(st.one_of(st.just(who.user_id), st.sampled_from(USERS)))
    kind = draw(st.sampled_from(KINDS))
    what = Resource(kind, Scope(mandate, fi), owner, draw(st.sampled_from([None, "res-1"])))
    return who, draw(st.sampled_from(ACTIONS)), what


def every_request() -> Iterator[tuple[Principal, Action, Resource]]:
    """Every distinguishable request over a small world (4,608 of them).

    Only equality matters to the rules, so two mandates, three feature instances
    (none, f1, f2), every subset of the four role names, own or other resource,
    both kinds and all four actions cover every case.
    """
    for mandate in (M1, M2):
        for principal_fi in FEATURE_INSTANCES:
            for mask in range(1 << len(ROLE_NAMES)):
                roles = tuple(r for i, r in enumerate(ROLE_NAMES) if mask & (1 << i))
                who = Principal(ALICE, M1, principal_fi, roles)
                for resource_fi in FEATURE_INSTANCES:
                    for owner in (ALICE, BOB):
                        for kind in KINDS:
                            what = Resource(kind, Scope(mandate, resource_fi), owner)
                            for action in ACTIONS:
                                yield who, action, what


class AuthorizerContract:
    """Abstract contract for authorizer adapters; subclasses provide ``authorizer``.

    Capability flag (a class attribute; override in the subclass):
    :attr:`follows_role_table`. The guarantees of ``docs/security.md`` (nothing
    crosses mandates, a feature instance's resources stay inside it, ids and role
    names are data) hold for every authorizer; the role table's own rules (rules 2
    and 4 above and the equivalence tests) only for one that claims them.
    """

    follows_role_table: ClassVar[bool] = True
    """Whether the adapter decides exactly as the default role table (admin, member,
    viewer). A host's own policy with other rules sets ``False`` and is held to the
    guarantees only."""

    def _role_table_rule(self) -> None:
        if not self.follows_role_table:
            pytest.skip("a rule of the role table (follows_role_table = False)")

    @pytest.fixture
    def authorizer(self) -> Iterator[Authorizer]:
        """The adapter under test; every subclass must override this fixture."""
        pytest.fail("an AuthorizerContract subclass must provide `authorizer`")
        yield  # pragma: no cover - makes this a generator like the overrides

    # -- identity -------------------------------------------------------------

    def test_name_is_a_short_non_empty_string(self, authorizer: Authorizer) -> None:
        assert isinstance(authorizer.name, str)
        assert authorizer.name.strip() == authorizer.name
        assert 0 < len(authorizer.name) <= 40

    # -- rule 1: never across mandates ----------------------------------------

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", ACTIONS)
    @pytest.mark.parametrize(
        "roles", [("admin",), ("member",), ("viewer",), ("admin", "member", "viewer")]
    )
    @pytest.mark.parametrize(("principal_fi", "resource_fi"), [(None, None), (FI1, FI1)])
    def test_nothing_crosses_mandates(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        action: Action,
        roles: tuple[str, ...],
        principal_fi: str | None,
        resource_fi: str | None,
    ) -> None:
        who = principal(*roles, fi=principal_fi, mandate=M1)
        # Even the principal's own resource with the same feature instance id.
        what = resource(kind, fi=resource_fi, mandate=M2, owner=ALICE)
        assert authorizer.is_allowed(who, action, what) is False

    # -- rule 2: admin ---------------------------------------------------------

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", ACTIONS)
    @pytest.mark.parametrize("principal_fi", [None, FI1])
    @pytest.mark.parametrize("resource_fi", [None, FI1, FI2])
    def test_admin_may_do_everything_in_its_mandate(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        action: Action,
        principal_fi: str | None,
        resource_fi: str | None,
    ) -> None:
        self._role_table_rule()
        who = principal("admin", fi=principal_fi)
        what = resource(kind, fi=resource_fi, owner=BOB)
        assert authorizer.is_allowed(who, action, what) is True

    # -- rule 4: viewer and member ----------------------------------------------

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("owner", [ALICE, BOB])
    @pytest.mark.parametrize(
        ("principal_fi", "resource_fi"), [(None, None), (FI1, FI1), (FI1, None)]
    )
    def test_viewer_may_only_read(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        owner: str,
        principal_fi: str | None,
        resource_fi: str | None,
    ) -> None:
        self._role_table_rule()
        who = principal("viewer", fi=principal_fi)
        what = resource(kind, fi=resource_fi, owner=owner)
        assert authorizer.is_allowed(who, Action.READ, what) is True
        for action in (Action.CREATE, Action.UPDATE, Action.DELETE):
            assert authorizer.is_allowed(who, action, what) is False, action

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", [Action.READ, Action.CREATE])
    @pytest.mark.parametrize("owner", [ALICE, BOB])
    @pytest.mark.parametrize(
        ("principal_fi", "resource_fi"), [(None, None), (FI1, FI1), (FI1, None)]
    )
    def test_member_may_read_and_create(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        action: Action,
        owner: str,
        principal_fi: str | None,
        resource_fi: str | None,
    ) -> None:
        self._role_table_rule()
        who = principal("member", fi=principal_fi)
        what = resource(kind, fi=resource_fi, owner=owner)
        assert authorizer.is_allowed(who, action, what) is True

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", WRITES)
    @pytest.mark.parametrize(
        ("principal_fi", "resource_fi"), [(None, None), (FI1, FI1), (FI1, None)]
    )
    def test_member_may_update_and_delete_only_what_it_owns(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        action: Action,
        principal_fi: str | None,
        resource_fi: str | None,
    ) -> None:
        self._role_table_rule()
        who = principal("member", fi=principal_fi, user=ALICE)
        assert authorizer.is_allowed(who, action, resource(kind, fi=resource_fi, owner=ALICE))
        assert (
            authorizer.is_allowed(who, action, resource(kind, fi=resource_fi, owner=BOB)) is False
        )

    @pytest.mark.parametrize("roles", [("member",), ("viewer",), ("member", "viewer")])
    def test_adding_a_message_needs_update_on_the_workflow(
        self, authorizer: Authorizer, roles: tuple[str, ...]
    ) -> None:
        """Attaching a document updates the workflow: only its owner (or an admin) may."""
        self._role_table_rule()
        who = principal(*roles, fi=FI1, user=ALICE)
        own = resource(ResourceKind.WORKFLOW, fi=FI1, owner=ALICE)
        other = resource(ResourceKind.WORKFLOW, fi=FI1, owner=BOB)
        assert authorizer.is_allowed(who, Action.UPDATE, own) is ("member" in roles)
        assert authorizer.is_allowed(who, Action.UPDATE, other) is False
        assert authorizer.is_allowed(principal("admin", fi=FI2), Action.UPDATE, other) is True

    # -- rule 3: feature-instance isolation ---------------------------------------

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", ACTIONS)
    @pytest.mark.parametrize("principal_fi", [FI2, None])
    def test_feature_instance_resource_is_hidden_outside_its_instance(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        action: Action,
        principal_fi: str | None,
    ) -> None:
        # A principal in another feature instance, or at mandate level, sees nothing
        # of FI1, not even what it owns itself.
        who = principal("member", "viewer", fi=principal_fi, user=ALICE)
        for owner in (ALICE, BOB):
            what = resource(kind, fi=FI1, owner=owner)
            assert authorizer.is_allowed(who, action, what) is False, owner

    @pytest.mark.parametrize("kind", KINDS)
    def test_feature_instance_resource_is_visible_inside_its_instance(
        self, authorizer: Authorizer, kind: ResourceKind
    ) -> None:
        self._role_table_rule()
        what = resource(kind, fi=FI1, owner=BOB)
        assert authorizer.is_allowed(principal("viewer", fi=FI1), Action.READ, what) is True
        assert authorizer.is_allowed(principal("viewer", fi=FI2), Action.READ, what) is False

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("principal_fi", [None, FI1, FI2])
    def test_mandate_level_resource_is_visible_in_every_feature_instance(
        self, authorizer: Authorizer, kind: ResourceKind, principal_fi: str | None
    ) -> None:
        self._role_table_rule()
        what = resource(kind, fi=None, owner=BOB)
        assert authorizer.is_allowed(principal("viewer", fi=principal_fi), Action.READ, what)
        member = principal("member", fi=principal_fi, user=ALICE)
        assert authorizer.is_allowed(member, Action.READ, what) is True
        mine = resource(kind, fi=None, owner=ALICE)
        assert authorizer.is_allowed(member, Action.DELETE, mine) is True

    # -- roles that grant nothing ---------------------------------------------------

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", ACTIONS)
    @pytest.mark.parametrize("roles", [("other",), ("Admin",), ("ADMIN", "Member"), ("",)])
    def test_unknown_roles_grant_nothing(
        self,
        authorizer: Authorizer,
        kind: ResourceKind,
        action: Action,
        roles: tuple[str, ...],
    ) -> None:
        self._role_table_rule()
        who = principal(*roles, fi=FI1, user=ALICE)
        for fi in (None, FI1):
            what = resource(kind, fi=fi, owner=ALICE)
            assert authorizer.is_allowed(who, action, what) is False, fi

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("action", ACTIONS)
    def test_principal_without_roles_gets_nothing(
        self, authorizer: Authorizer, kind: ResourceKind, action: Action
    ) -> None:
        self._role_table_rule()
        who = principal(fi=FI1, user=ALICE)
        assert who.roles == ()
        for fi in (None, FI1):
            assert authorizer.is_allowed(who, action, resource(kind, fi=fi, owner=ALICE)) is False

    @pytest.mark.parametrize("kind", KINDS)
    def test_unknown_role_beside_a_known_one_changes_nothing(
        self, authorizer: Authorizer, kind: ResourceKind
    ) -> None:
        self._role_table_rule()
        who = principal("other", "viewer", fi=FI1)
        what = resource(kind, fi=FI1, owner=ALICE)
        assert authorizer.is_allowed(who, Action.READ, what) is True
        assert authorizer.is_allowed(who, Action.UPDATE, what) is False

    # -- robustness -------------------------------------------------------------------

    @pytest.mark.parametrize(
        "odd",
        ['x"||"1"=="1', "x')or('1", "a,b", "*", "#", "p.role", "r.sub.mandate", "${admin}"],
    )
    def test_ids_and_roles_are_data_never_rules(self, authorizer: Authorizer, odd: str) -> None:
        """Ids and role names that look like expressions or wildcards grant nothing extra."""
        assert (
            authorizer.is_allowed(
                principal(odd, fi=FI1), Action.READ, resource(ResourceKind.FILE, fi=FI1)
            )
            is False
        )
        assert (
            authorizer.is_allowed(
                principal("admin", mandate=odd),
                Action.READ,
                resource(ResourceKind.FILE, mandate=M1),
            )
            is False
        )
        assert (
            authorizer.is_allowed(
                principal("admin", mandate=M1, user=odd),
                Action.READ,
                resource(ResourceKind.FILE, mandate=odd, owner=odd),
            )
            is False
        )

    @pytest.mark.parametrize("odd", ['x"||"1"=="1', "*", "${admin}", "a,b"])
    def test_odd_ids_are_matched_as_plain_text(self, authorizer: Authorizer, odd: str) -> None:
        self._role_table_rule()
        assert (
            authorizer.is_allowed(
                principal("member", fi=odd, user=odd),
                Action.DELETE,
                resource(ResourceKind.WORKFLOW, fi=odd, owner=odd),
            )
            is True
        )

    # -- equivalence with the role table ------------------------------------------------

    def test_same_answer_as_the_role_table(self, authorizer: Authorizer) -> None:
        """Random principals, actions and resources: the adapter answers as the role table."""
        self._role_table_rule()
        reference = RoleTableAuthorizer()

        # The property is an inner function so that one hypothesis run belongs to one
        # adapter (the contract method itself is shared by every subclass).
        @settings(max_examples=200, deadline=None)
        @given(request=requests())
        def same_answer(request: tuple[Principal, Action, Resource]) -> None:
            who, action, what = request
            expected = reference.is_allowed(who, action, what)
            assert expected is spec_oracle(who, action, what)
            assert authorizer.is_allowed(who, action, what) is expected

        same_answer()

    def test_same_answer_as_the_role_table_for_every_case(self, authorizer: Authorizer) -> None:
        """Exhaustive over a small world: every disagreement with the role table is listed."""
        self._role_table_rule()
        reference = RoleTableAuthorizer()
        disagreements = [
            (who, action.value, what)
            for who, action, what in every_request()
            if authorizer.is_allowed(who, action, what)
            is not reference.is_allowed(who, action, what)
        ]
        assert disagreements[:5] == []
        assert sum(1 for _ in every_request()) == 4608
