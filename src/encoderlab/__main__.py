"""`python -m encoderlab ...`: the same entry point as the `encoderlab` console script.

For a machine where the venv's `bin/` is not on PATH (a notebook kernel, `python -m` habits): without
this module Python said "'encoderlab' is a package and cannot be directly executed"."""

from encoderlab.cli import main

if __name__ == "__main__":
    main()
