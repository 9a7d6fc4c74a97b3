"""`python -m encoderlab ...`: the same entry point as the `encoderlab` console script.

For a machine where the venv's `bin/` is not on PATH (a notebook kernel, `python -m` habits): without
this module Python said "'encoderlab' is a package and cannot be directly executed".

`python -m` puts the working folder first on the module path, which the console script never does: an
`ast.py` (or `yaml.py`, `torch.py`, ...) in the folder a command ran from was imported in place of the real
module, and its code ran. So the folder is taken off the path before anything else is imported (`os` and
`sys` are loaded before the path is read). `encoderlab` itself is already imported by then, from wherever
Python found it, and its own modules are found through the package.

Trade-off: where `encoderlab` itself was found in the working folder (`cd src && python -m encoderlab` in
a checkout not installed), the folder stays: it is the package's own source folder, and the workers
`multiprocessing` spawns start from this process's path, so without it they could not import the package
(or, beside an editable install, imported another copy).
"""

import os
import sys

_folder = os.path.realpath(os.curdir)
_own = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # where `encoderlab` was found
if sys.path and os.path.realpath(sys.path[0] or os.curdir) == _folder and _own != _folder:
    del sys.path[0]

from encoderlab.cli import main  # noqa: E402 (after the working folder left the path)

if __name__ == "__main__":
    main()
