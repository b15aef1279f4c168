"""The MCP face of dreamrsi: a server (the official ``mcp`` SDK) whose tools call the services
the command line calls and return the dicts its ``--json`` prints (:mod:`dreamrsi.views`).

:mod:`~dreamrsi.mcp_server.server` assembles the server from one module per group of tools
(:mod:`~dreamrsi.mcp_server.reading`, :mod:`~dreamrsi.mcp_server.work`, whose long work runs as
:mod:`~dreamrsi.mcp_server.jobs`); a later group (the Dream Run verbs) is one more class of
tools. Nothing here is imported until ``dreamrsi
mcp`` runs, so the other commands never load the SDK. docs/mcp.md describes every tool.
"""
