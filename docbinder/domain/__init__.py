"""The pure core of docbinder: entities, value objects, references, errors.

Imports nothing else of docbinder and no adapter library.
"""
