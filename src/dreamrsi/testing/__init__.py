"""Test support for dreamrsi and its plug-ins: conformance suites a new backend subclasses.

Importing these modules needs the test dependencies (pytest, hypothesis); the library itself
never imports them.
"""
