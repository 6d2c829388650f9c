"""A third-party blob store tested and registered as a separate package would do it."""
