"""A task file's test split as a decontamination set (`eval/tasks/testtexts.py`).

A retrieval task's set is its test queries and the documents they are judged relevant to, not the whole
collection: its distractors are often a public corpus a pretraining corpus rightly holds.
"""

from __future__ import annotations

import pytest
from tests.eval.test_task_file_beir import beir_task, write_beir

from encoderlab.eval.tasks.testtexts import task_test_name, task_test_set

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def test_a_retrieval_tasks_set_is_its_test_queries_and_their_relevant_documents_not_the_collection(tmp_path):
    write_beir(tmp_path / "sci")
    path = beir_task(tmp_path)
    texts = set(task_test_set(task_test_name(str(path))).texts)
    # test queries q30-q36 (q36 judged only 0); relevant: d30..d35 at grade 2, d31..d36 at 1 (d32..d37 at 0)
    queries = {f"where is thing {i}" for i in range(30, 37)}
    relevant = {f"title {i} text about thing {i} and more" for i in range(30, 37)}
    assert queries <= texts
    assert relevant <= texts
    # the collection's other documents (d0..d29, d38, d39) are distractors, not test inputs
    assert texts - queries == relevant
