"""The ``docbinder`` command line (SPEC C15)."""
