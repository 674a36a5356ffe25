"""The ``npukit`` command line."""
