"""Integrations with agent frameworks; each lives in its own module behind its pip extra.

``docbinder.integrations.adk``: Google ADK's artifact service (extra ``[adk]``).
"""
