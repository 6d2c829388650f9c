"""Integrations of docbinder with agent frameworks, each behind its own pip extra.

Importing a submodule without its extra raises
:class:`~docbinder.domain.errors.MissingExtra` naming the pip command.

``docbinder.integrations.adk``: Google ADK's artifact service (extra ``[adk]``).
"""
