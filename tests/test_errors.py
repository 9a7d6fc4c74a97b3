"""errors: an unknown name is one line that names the valid name it is probably a typo of."""

from __future__ import annotations

from encoderlab.errors import closest, did_you_mean, shown


def test_an_unknown_name_names_the_valid_one_it_is_close_to():
    # was "unknown recipe 'pfs-mlmm'; valid: ..." and a list of 20 recipes to read through
    assert str(did_you_mean("pfs-mlmm", ["pfs-clm", "pfs-mlm", "cpt-mlm"], "recipe")) == (
        "unknown recipe 'pfs-mlmm' (pfs-mlm?); valid: cpt-mlm, pfs-clm, pfs-mlm"
    )
    assert (
        str(did_you_mean("nope", ["pfs-clm", "pfs-mlm"], "recipe"))
        == "unknown recipe 'nope'; valid: pfs-clm, pfs-mlm"
    )
    assert closest("colour", ["columns", "labels"]) is None  # a far guess misleads: none is named
    assert closest("lables", ["columns", "labels"]) == "labels"


def test_a_refusal_with_its_own_fields_survives_pickling():
    # a study worker's refusal comes back to the study's process pickled; Exception's reduce called
    # cls(*args), and EmptySource / MissingTextField, which take more than the line, failed to rebuild
    import pickle

    from encoderlab.data.filereaders import MissingTextField
    from encoderlab.data.mixing import EmptySource

    for exc in (
        EmptySource("line", "problem", ["a.txt"]),
        MissingTextField("line", "problem", "f.jsonl", "body"),
    ):
        exc.quiet = True
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == "line" and back.__dict__ == exc.__dict__


def test_a_shown_value_is_cut_to_its_width_a_text_inside_its_quotes():
    assert shown("short") == "'short'" and shown([1, 2]) == "[1, 2]"  # within the width: as repr
    text = "it's " + "x" * 100
    assert shown(text) == repr(text[:54] + "...") and len(shown(text)) <= 60  # still a quoted text
    assert shown(list(range(50)), 80) == repr(list(range(50)))[:77] + "..."
