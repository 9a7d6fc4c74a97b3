"""The YAML reader: numbers kept as the user wrote them."""


def test_a_number_as_written_survives_copy_and_deepcopy():
    # copy.deepcopy of a Numeral or WrittenInt was a TypeError: __new__ needs the text it was written as
    import copy

    from encoderlab.yamltext import as_written, read_yaml

    data = read_yaml("a: 1e5\nb: 010")
    for copied in (copy.copy(data), copy.deepcopy(data)):
        assert copied == {"a": 100000.0, "b": 8}
        assert [as_written(copied[k]) for k in "ab"] == ["1e5", "010"]
