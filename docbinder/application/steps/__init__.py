"""Steps the use cases share: access decisions, hashing, blob rules, storing, attaching.

None of these is a use case of its own; each is composed by the use cases in
:mod:`docbinder.application.use_cases` (and built once by the composition root).
"""
