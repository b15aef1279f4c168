"""The JSON of the dashboard's and the report's views of dreaming, replay, survival, Dream Runs
and lessons: pure reads of a store returning JSON-ready dicts, one function per view, so the web
routes and ``dreamrsi report`` show the same thing.

Beside :mod:`dreamrsi.views` (the runs, trees and ledger that the CLI and the MCP server share)
and at its layer; every function only reads, so a read-only store will do.
"""
