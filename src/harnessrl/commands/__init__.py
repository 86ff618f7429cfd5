"""The commands of `harnessrl` (typer functions and groups), one module per package they drive.

Top layer, with `harnessrl.cli` (which wires them into one app) and `harnessrl.config` (the
assembled `Config`): a command parses its config, builds objects and calls the library, which takes
config sections, never the assembled `Config`. No library module imports a command module (the
import-linter layers contract in pyproject.toml).
"""
