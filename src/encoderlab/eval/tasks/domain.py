"""The `domain` suite's code-retrieval task: docstring -> function over stdlib modules held out
of the `code-python` corpus, read from the running interpreter (no fetch needed)."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from pathlib import Path

from encoderlab.eval.spec import TaskData
from encoderlab.eval.tasks.splits import ir_task_data, require_nonempty, split_groups


def docstring_functions(source: str, module: str) -> list[dict]:
    """Functions and methods of `source` with a docstring: query = its first paragraph, document =
    the function's code with the docstring removed (so the answer is not in the document)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node)
        if not doc or not node.body or len(node.body) < 2:
            continue
        query = " ".join(doc.strip().split("\n\n")[0].split())
        doc_node = node.body[0]
        code = lines[node.lineno - 1 : doc_node.lineno - 1] + lines[doc_node.end_lineno : node.end_lineno]
        if len(query) < 10:
            continue
        out.append(
            {
                "qid": f"{module}:{node.lineno}",
                "query": query,
                "did": f"{module}:{node.name}:{node.lineno}",
                "doc": textwrap.dedent("\n".join(code)),
            }
        )
    return out


def code_functions(modules: Sequence[str]) -> list[dict]:
    """Docstring/function records of the given top-level stdlib modules (files of this interpreter)."""
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for module in modules:
        files = (
            [root / f"{module}.py"]
            if (root / f"{module}.py").is_file()
            else sorted((root / module).rglob("*.py"))
        )
        for path in files:
            try:
                out += docstring_functions(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
            except (UnicodeDecodeError, OSError):
                continue
    return out


def load_code_retrieval(name: str, sizes: dict) -> TaskData:
    from encoderlab.data.assets import code_heldout_modules

    records = code_functions(code_heldout_modules())
    train, val, test = split_groups(records, lambda r: r["did"].split(":")[0], name, (0.6, 0.1, 0.3))
    return require_nonempty(name, ir_task_data(train, val, test, sizes))
