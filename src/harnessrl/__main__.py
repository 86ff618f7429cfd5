"""`python -m harnessrl ...`: the command line (what `torchrun -m harnessrl train ...` runs on every rank)."""

from harnessrl.cli import app

if __name__ == "__main__":
    app(prog_name="harnessrl")
