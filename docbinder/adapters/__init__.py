"""Adapters: implementations of the ports for concrete technologies."""
