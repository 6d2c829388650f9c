"""Reliability and security under faults, load and hostile input (see docs/security.md)."""
