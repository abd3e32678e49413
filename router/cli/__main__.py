"""``python -m router.cli`` runs the ``toolsift`` command."""
from .app import main

main()
