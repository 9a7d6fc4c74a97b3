"""`python -m encoderlab ...`: the same entry point as the `encoderlab` console script.

For a machine where the venv's `bin/` is not on PATH (a notebook kernel, `python -m` habits): without
this module Python said "'encoderlab' is a package and cannot be directly executed".

`python -m` puts the working folder first on the module path, which the console script never does: an
`ast.py` (or `yaml.py`, `torch.py`, ...) in the folder a command ran from was imported in place of the real
module, and its code ran. So the folder is taken off the path before anything else is imported (`os` and
`sys` are loaded before the path is read). `encoderlab` itself is already imported by then, from wherever
Python found it, and its own modules are found through the package.
"""

import os
import sys

if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.path.abspath(os.curdir):
    del sys.path[0]

from encoderlab.cli import main  # noqa: E402 (after the working folder left the path)

if __name__ == "__main__":
    main()
