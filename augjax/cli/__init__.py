"""The ``augjax`` command line."""
