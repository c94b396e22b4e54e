"""decodecalc's version, on the ground floor where the preset cache and the HTML page read it.

It cannot live in the top package: a module below would import the floor above it to learn
it. pyproject.toml reads it from here (``[tool.hatch.version]``), and ``decodecalc.__version__``
re-exports it.
"""

__version__ = "0.1.0"
