"""harnessrl: reinforcement learning through unmodified agent harnesses."""

__version__ = "0.1.0"
