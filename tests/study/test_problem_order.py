"""A study file's problems are listed in one order, the schema's, whatever the process.

`files._build` walked the fields a file sets as a set (`fields.keys() & data.keys()`), whose order follows
string hashing, which Python seeds per process: a file with a problem in `runs` and one in `claims` listed
them one way in one run and the other way in the next (`study plan` twice, two orders).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import yaml
from tests.reliability.test_hostile_arguments import write_texts

from encoderlab.study.spec import StudySpec

ROOT = Path(__file__).resolve().parents[2]

STUDY = {
    "name": "mini",
    "data": [{"name": "main", "corpus": ["texts.txt"], "vocab_size": 300}],
    "runs": [{"name": "a", "recipe": "smoke-mlm"}, {"name": None, "recipe": "smoke-clm"}],
    "baseline": "a",
    "claims": [{"id": "x", "kind": "beats", "a": "a", "b": None, "text": "t"}],
    "seq_len": "long",
}

READ = "from encoderlab.study.files import load_study_file\ntry:\n    load_study_file(__import__('sys').argv[1])\nexcept Exception as exc:\n    print(exc)\n"


def test_the_problems_of_a_study_file_come_in_one_order_under_any_hash_seed(tmp_path):
    write_texts(tmp_path)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(STUDY, sort_keys=False))
    said = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
        out = subprocess.run(
            [sys.executable, "-c", READ, str(tmp_path / "s.yaml")], env=env, capture_output=True, text=True
        )
        said.add(out.stdout)
    (text,) = said  # one order under every seed
    where = [line.split(":")[0].strip() for line in text.splitlines()[1:]]
    by_field = {"seq_len": "study.seq_len", "runs": "runs[1].name", "claims": "claims[0] (x).b"}
    schema = [by_field[f.name] for f in dataclasses.fields(StudySpec) if f.name in by_field]
    assert where == schema, text  # and that order is the schema's
