"""Authorizer adapters (SPEC C11): the default role table, and Casbin."""

from docbinder.adapters.rbac.roletable import RoleTableAuthorizer

__all__ = ["RoleTableAuthorizer"]
