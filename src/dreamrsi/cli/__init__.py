"""The command line (Typer + Rich): thin commands over the services."""
