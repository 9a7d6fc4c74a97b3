"""errors: an unknown name is one line that names the valid name it is probably a typo of."""

from __future__ import annotations

from encoderlab.errors import closest, did_you_mean


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
