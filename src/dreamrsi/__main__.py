"""``python -m dreamrsi`` runs the command line."""

from dreamrsi.cli.main import main

main()
