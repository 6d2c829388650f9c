"""Steps the use cases share that have no design name of their own.

Access decisions, hashing, blob rules, storing (:class:`~.storing.FileStorer`, which
asks :class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate` about
duplicates), the store registration, the content switch, the extraction cache in front
of the extractor. None of these is a use case; each is composed by the use cases in
:mod:`docbinder.application.use_cases` (and built once by the composition root).
"""
