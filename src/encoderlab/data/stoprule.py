"""When a mixture of several sources ends (`Stop`), and the check of a rule given as text (`check_stop`).

Apart from `mixing.py`, which applies it, so that a study's schema (`study/spec.py`: a dataset's `stop`)
types the field without importing the mixer and its readers (numpy, the file kinds) where a study file is
only listed or checked. `mixing` re-exports both names: `data prepare`, `data tokenizer` and a study's
prepare node read one type, so the three cannot drift apart.
"""

from __future__ import annotations

from typing import Literal, get_args

from encoderlab.errors import UserError

Stop = Literal["first_exhausted", "all_exhausted"]
"""When a mixture of several sources ends: the one type `data prepare --stop` and `data tokenizer --stop`
parse (tyro's choices), a study dataset's `stop` takes and `mix_documents` applies."""
DEFAULT_STOP: Stop = "first_exhausted"
"""The rule where none is given: the weights' proportions kept exactly, the rest of larger sources unread."""


def check_stop(stop: str) -> None:
    """Refuse a stop rule that is none of `Stop`'s (the Python API; the commands' parser offers only those)."""
    if stop not in get_args(Stop):
        raise UserError(f"stop must be 'first_exhausted' or 'all_exhausted', got '{stop}'")
