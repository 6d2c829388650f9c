"""Contract suites for docbinder's ports, shipped for third-party backends."""
