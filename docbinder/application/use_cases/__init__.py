"""The use cases: one class per module, named as the design names it.

:class:`~docbinder.application.use_cases.store_file.StoreFile` lives in
``store_file.py``, :class:`~docbinder.application.use_cases.attach_file.AttachFile`
in ``attach_file.py``, and so on. Each is called with the principal (or the run
context) first and works through the ports only; the steps several of them share
live in :mod:`docbinder.application.steps`.
"""
