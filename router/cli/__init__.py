"""The ``toolsift`` command line: one command tree, each family of commands in its own module.

    toolsift catalog add|stats|list|show|remove     router/cli/catalog.py
    toolsift index / route                          router/cli/route.py
    toolsift check / audit                          router/cli/check.py
    toolsift serve openai|mcp                       router/cli/serve.py
    toolsift tune                                   router/cli/tune.py
    toolsift demo                                   router/cli/demo.py
    toolsift bench ...                              benchmarks/cli.py (a plug-in, see app.py)
"""
from .app import app, main

__all__ = ["app", "main"]
