"""External benchmark packs: YAML, JSON or JSONL files in the shapes other tools write. Expected answers are
always kept, whatever they are called.

Shapes recognised (a file may give presets by name; otherwise its one preset is named after the file):

1. ``presets:`` — ``{presets: {NAME: {description, cases: [...]}}}`` or ``{presets: {NAME: [...]}}``, cases in
   this project's fields (``case_id``, ``task``, ``context``, ``expected``, ``scorer``, ``tags``, …);
2. top-level ``cases`` — pydantic-evals datasets: ``{name?, cases: [{name, inputs, expected_output, metadata,
   evaluators}], evaluators}`` (``EqualsExpected`` → exact, ``Contains`` → contains, ``LLMJudge`` → judge);
3. Google ADK eval sets — ``{eval_set_id, eval_cases: [{eval_id, conversation: [{user_content, final_response}],
   session_input}]}``; earlier turns become the context, the last turn's reply the expected answer;
4. plain records — JSONL rows, a JSON list, or ``{records | items | data: [...]}``, with the usual field names
   (``question``/``query``/``prompt`` …, ``answer``/``expected_output``/``reference``/``target`` …).

A context is a string (inline), ``{file: PATH}`` or ``context_file: PATH`` (relative to the pack file),
``{inline: VALUE}``, or ``{generator: NAME, params: {...}}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError

from rlm_bench.cases import BenchmarkCase, ContextSpec
from rlm_host import RlmError

ID_KEYS = ("case_id", "id", "question_id", "eval_id", "uid", "name")
TASK_KEYS = ("task", "question", "query", "prompt", "input", "instruction")
EXPECTED_KEYS = ("expected", "expected_answer", "expected_output", "answer", "answers", "reference", "target",
                 "label", "gold", "ground_truth")
CONTEXT_KEYS = ("context", "document", "documents", "passage", "haystack")
FILE_KEYS = ("context_file", "context_path")
PASSTHROUGH = ("description", "environment", "max_steps", "exec_timeout", "scorer", "tags", "options", "mode")
EVALUATORS = {"equalsexpected": "exact", "contains": "contains", "llmjudge": "judge", "isinstance": None}


class PackFileError(RlmError):
    """A pack file that cannot be read or whose cases do not validate."""

    exit_code = 2


class ExternalPreset:
    """One preset read from a file: its name, description, source file and validated cases."""

    def __init__(self, name: str, description: str, source: Path, cases: list[BenchmarkCase]) -> None:
        self.name, self.description, self.source, self.cases = name, description, source, cases


def load_pack_file(path: str | Path) -> list[ExternalPreset]:
    """Every preset in ``path`` (see the module docstring for the shapes)."""
    path = Path(path).expanduser().resolve()
    data = _read(path)
    base = path.parent
    if isinstance(data, dict) and isinstance(data.get("presets"), dict):
        presets = []
        for name, body in data["presets"].items():
            rows = body.get("cases", []) if isinstance(body, dict) else body
            description = str(body.get("description", "")) if isinstance(body, dict) else ""
            presets.append(_preset(str(name), description, path, [_record_row(r, base) for r in _rows(rows, path)]))
        return presets
    name = str(data.get("name") or path.stem) if isinstance(data, dict) else path.stem
    description = str(data.get("description", "")) if isinstance(data, dict) else ""
    if isinstance(data, dict) and "eval_cases" in data:
        rows = [_adk_row(r) for r in _rows(data["eval_cases"], path)]
        return [_preset(str(data.get("eval_set_id") or name), description or str(data.get("name", "")), path, rows)]
    if isinstance(data, dict) and "cases" in data:
        default_scorer = _scorer_from(data.get("evaluators"))
        rows = [_evals_row(r, base, default_scorer) for r in _rows(data["cases"], path)]
        return [_preset(name, description, path, rows)]
    if isinstance(data, dict):
        data = next((data[k] for k in ("records", "items", "data") if k in data), None)
        if data is None:
            raise PackFileError(f"{path}: no presets, cases, eval_cases, records or items found")
    return [_preset(name, description, path, [_record_row(r, base) for r in _rows(data, path)])]


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PackFileError(f"cannot read pack file {path}: {exc.strerror or exc}") from None
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml  # imported only for YAML packs

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PackFileError(f"{path}: not valid YAML: {exc}") from None
    if suffix != ".jsonl":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if suffix == ".json":
                raise PackFileError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise PackFileError(f"{path}: line {number} is not JSON: {exc.msg}") from None
    return rows


def _rows(rows: Any, path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise PackFileError(f"{path}: cases must be a list of objects")
    return list(enumerate(rows))


def _preset(name: str, description: str, path: Path, rows: list[tuple[int, dict[str, Any]]]) -> ExternalPreset:
    cases, seen = [], set()
    for index, fields in rows:
        fields.setdefault("case_id", f"{name}_{index + 1}")
        if fields["case_id"] in seen:
            raise PackFileError(f"{path}: preset {name!r}: case id {fields['case_id']!r} appears twice")
        seen.add(fields["case_id"])
        try:
            cases.append(BenchmarkCase.model_validate(fields))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'case'}: {e['msg']}" for e in exc.errors())
            raise PackFileError(f"{path}: preset {name!r}, case {index + 1} ({fields['case_id']}): "
                                f"{problems}") from None
    return ExternalPreset(name, description or f"cases from {path.name}", path, cases)


def _first(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[Optional[str], Any]:
    for key in keys:
        if key in row and row[key] is not None:
            return key, row[key]
    return None, None


def _context(value: Any, base: Path) -> ContextSpec:
    if isinstance(value, ContextSpec):
        return value
    if isinstance(value, dict) and ("file" in value or "path" in value) and len(value) <= 2 and "kind" not in value:
        return ContextSpec.file(_path(str(value.get("file") or value.get("path")), base))
    if isinstance(value, dict) and "generator" in value and "kind" not in value:
        return ContextSpec.generated(str(value["generator"]), **dict(value.get("params") or {}))
    if isinstance(value, dict) and set(value) == {"inline"}:
        return ContextSpec.inline(value["inline"])
    if isinstance(value, dict) and "kind" in value:
        spec = ContextSpec.model_validate(value)
        return ContextSpec.file(_path(spec.path or "", base)) if spec.kind == "file" else spec
    return ContextSpec.inline(value)


def _path(raw: str, base: Path) -> str:
    path = Path(raw).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _common(row: dict[str, Any], base: Path) -> dict[str, Any]:
    """Fields every row shape shares: id, context (inline or a file), pass-through fields, question_type tag."""
    out: dict[str, Any] = {k: row[k] for k in PASSTHROUGH if k in row and row[k] is not None}
    key, value = _first(row, ID_KEYS)
    if key is not None:
        out["case_id"] = str(value)
    _, file = _first(row, FILE_KEYS)
    _, context = _first(row, CONTEXT_KEYS)
    if file is not None:
        out["context"] = ContextSpec.file(_path(str(file), base))
    elif context is not None:
        out["context"] = _context(context, base)
    if "question_type" in row:
        tags = dict(out.get("tags") or {}) if not isinstance(out.get("tags"), list) else {t: "yes" for t in out["tags"]}
        out["tags"] = {**tags, "question_type": str(row["question_type"])}
    return out


def _record_row(item: tuple[int, dict[str, Any]], base: Path) -> tuple[int, dict[str, Any]]:
    index, row = item
    out = _common(row, base)
    _, task = _first(row, TASK_KEYS)
    if task is not None:
        out["task"] = task if isinstance(task, str) else json.dumps(task, ensure_ascii=False)
    key, expected = _first(row, EXPECTED_KEYS)
    if key is not None:
        out["expected"] = expected
    return index, out


def _evals_row(item: tuple[int, dict[str, Any]], base: Path,
               default_scorer: Optional[str]) -> tuple[int, dict[str, Any]]:
    """A pydantic-evals case: ``inputs`` (a string, or an object holding the question and maybe the context)."""
    index, row = item
    inputs = row.get("inputs")
    merged = dict(inputs) if isinstance(inputs, dict) else {"task": inputs} if inputs is not None else {}
    merged.update({k: v for k, v in row.items() if k not in ("inputs", "metadata", "evaluators")})
    _, out = _record_row((index, merged), base)
    if "task" not in out and isinstance(inputs, dict):  # inputs without a question field: ask with all of them
        rest = {k: v for k, v in inputs.items() if k not in CONTEXT_KEYS + FILE_KEYS}
        out["task"] = json.dumps(rest, ensure_ascii=False)
    if "expected_output" in row:
        out["expected"] = row["expected_output"]
    metadata = row.get("metadata")
    if isinstance(metadata, dict):
        out["tags"] = {**{str(k): str(v) for k, v in metadata.items() if not isinstance(v, (dict, list))},
                       **dict(out.get("tags") or {})}
    scorer = _scorer_from(row.get("evaluators")) or default_scorer
    if scorer and "scorer" not in out:
        out["scorer"] = scorer
    return index, out


def _scorer_from(evaluators: Any) -> Optional[str]:
    for evaluator in evaluators or []:
        name = (evaluator if isinstance(evaluator, str)
                else next(iter(evaluator), "") if isinstance(evaluator, dict) else "")
        scorer = EVALUATORS.get(str(name).lower())
        if scorer:
            return scorer
    return None


def _text(content: Any) -> str:
    if isinstance(content, dict):
        return "".join(str(p.get("text", "")) for p in content.get("parts", []) if isinstance(p, dict))
    return "" if content is None else str(content)


def _adk_row(item: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """A Google ADK eval case: the last turn is the task and its reply the expected answer."""
    index, row = item
    turns = row.get("conversation") or []
    out: dict[str, Any] = {"case_id": str(row.get("eval_id", f"eval_{index + 1}"))}
    if turns:
        last = turns[-1]
        out["task"] = _text(last.get("user_content"))
        expected = _text(last.get("final_response"))
        if expected:
            out["expected"] = expected
        history = [f"user: {_text(t.get('user_content'))}\nassistant: {_text(t.get('final_response'))}"
                   for t in turns[:-1]]
        state = (row.get("session_input") or {}).get("state")
        if history or state:
            out["context"] = ContextSpec.inline({"history": history, "session_state": state or {}})
        tools = (last.get("intermediate_data") or {}).get("tool_uses") or []
        if tools:
            out["tags"] = {"expected_tools": ",".join(str(t.get("name")) for t in tools if isinstance(t, dict))}
    return index, out
