"""Documents through ``rlm run`` as a user runs it: the model's code finds a fact on a named page of a PDF, in a
DOCX and in an HTML page; a file that cannot be read, or that goes past a limit, is one error line and exit 2; in
a folder it is skipped with a warning naming it; the second run of the same file reads the extraction cache when
this user signed the entry, and ignores it otherwise; ``rlm plugins doctor`` lists each loader's limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_context_documents import testing as samples

PLUGINS = "rlm-context-documents,rlm-sandbox-monty"
FACT = "Thermistor T4 failed at -41.7 C on day 117"
FIND = ("```repl\nfound = [name for name, doc in zip(list_files(), context) "
        "if 'T4 failed' in doc.replace(chr(10), ' ')]"
        "\nprint(found)\n```")
SEARCH = "```repl\nfound = 'T4 failed' in context.replace(chr(10), ' ')\nprint(found)\n```"


def _run(rlm_cli, model, context, *extra, sandbox="monty"):
    return rlm_cli("run", "Which page says what happened to T4?", "--context", context, "--model", model,
                   "--sandbox", sandbox, "--json", *extra, plugins=PLUGINS)


@pytest.mark.parametrize("sandbox", ["monty", "process"])
def test_a_run_finds_the_fact_on_its_page(rlm_cli, rlm_script, rlm_isolated, sandbox):
    samples.write_pdf(rlm_isolated.work / "report.pdf", 40, FACT, fact_page=27)
    model = rlm_script([FIND, "FINAL_VAR(found)"])
    result = _run(rlm_cli, model, "report.pdf", sandbox=sandbox)
    assert result.code == 0, result.err
    assert json.loads(result.out)["final_response"] == '["report.pdf#p27"]'
    start = json.loads(Path(json.loads(result.out)["trajectory_path"]).read_text().splitlines()[0])
    assert start["data"]["context"]["type"] == "list" and start["data"]["context"]["documents"] == 40


@pytest.mark.parametrize("name, write", [("report.docx", samples.write_docx), ("page.html", samples.write_html)])
def test_a_run_reads_docx_and_html_as_text(rlm_cli, rlm_script, rlm_isolated, name, write):
    write(rlm_isolated.work / name, FACT)
    result = _run(rlm_cli, rlm_script([SEARCH, "FINAL_VAR(found)"]), name)
    assert result.code == 0, result.err
    assert json.loads(result.out)["final_response"] == "true"


@pytest.mark.parametrize("case, expected", [
    ("encrypted", "the PDF is encrypted"),
    ("scanned", "no text in this PDF file"),
    ("truncated", "not a readable PDF file"),
])
def test_an_unreadable_pdf_is_one_error_and_exit_2(rlm_cli, rlm_script, rlm_isolated, case, expected):
    path = rlm_isolated.work / "in.pdf"
    if case == "encrypted":
        samples.write_encrypted_pdf(path)
    elif case == "scanned":
        samples.write_pdf(path, 4, text=False)
    else:
        whole = samples.write_pdf(rlm_isolated.work / "whole.pdf", 10).read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    result = _run(rlm_cli, rlm_script(["FINAL(x)"]), "in.pdf")
    assert result.code == 2 and json.loads(result.out)["error"].startswith(f"in.pdf: {expected}")
    lines = result.err.strip().splitlines()
    assert lines[0] == f"error: in.pdf: {lines[0].split(': ', 2)[2]}" and expected in lines[0]
    assert lines[1].startswith("hint: ") and len(lines) == 2 and "Traceback" not in result.err


def test_a_folder_skips_an_unreadable_document_with_a_warning(rlm_cli, rlm_script, rlm_isolated):
    docs = rlm_isolated.work / "docs"
    docs.mkdir()
    samples.write_pdf(docs / "report.pdf", 3, FACT, fact_page=2)
    samples.write_encrypted_pdf(docs / "locked.pdf")
    samples.write_html(docs / "page.html", "nothing here")
    result = _run(rlm_cli, rlm_script([FIND, "FINAL_VAR(found)"]), "docs")
    assert result.code == 0, result.err
    assert json.loads(result.out)["final_response"] == '["report.pdf#p2"]'
    assert "skipped 1 file(s) no context loader could read: locked.pdf (" in result.err
    assert "the PDF is encrypted" in result.err


def test_the_second_run_reads_the_cache_only_when_signed(rlm_cli, rlm_script, rlm_isolated):

    samples.write_pdf(rlm_isolated.work / "report.pdf", 5, FACT, fact_page=4)
    model = rlm_script([FIND, "FINAL_VAR(found)"])
    assert _run(rlm_cli, model, "report.pdf").code == 0
    (entry,) = (rlm_isolated.runs / "cache" / "documents").glob("*.json")
    header, _, payload = entry.read_bytes().partition(b"\n")
    header, parts = json.loads(header), json.loads(payload)
    parts[3][1], parts[1][1] = "nothing here", "T4 failed (as the cache says)"
    forged = json.dumps(parts, ensure_ascii=False).encode()
    entry.write_bytes(json.dumps(header).encode() + b"\n" + forged)  # edited, not signed: the PDF is read again
    result = _run(rlm_cli, rlm_script([FIND, "FINAL_VAR(found)"]), "report.pdf")
    assert json.loads(result.out)["final_response"] == '["report.pdf#p4"]'
    import hashlib

    from rlm_host.sdk.context import user_signature

    claim = {"format": 2, "document": entry.stem, "extractor": header["extractor"],
             "payload": hashlib.sha256(forged).hexdigest()}
    header["signature"] = user_signature(claim)  # signed with this user's key: the second run must read it
    entry.write_bytes(json.dumps(header).encode() + b"\n" + forged)
    result = _run(rlm_cli, rlm_script([FIND, "FINAL_VAR(found)"]), "report.pdf")
    assert json.loads(result.out)["final_response"] == '["report.pdf#p2"]'


def test_a_file_past_a_limit_is_one_error_and_a_folder_skips_it(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    import documents_hostile as hostile

    monkeypatch.setenv("RLM_CONTEXT_LOADER__PDF__MEMORY_MB", "256")
    monkeypatch.setenv("RLM_CONTEXT_LOADER__PDF__CPU_SECONDS", "20")
    docs = rlm_isolated.work / "docs"
    docs.mkdir()
    hostile.nested_xobject_pdf(docs / "nested.pdf")
    result = _run(rlm_cli, rlm_script(["FINAL(x)"]), "docs/nested.pdf")
    lines = result.err.strip().splitlines()
    assert result.code == 2 and lines[0].startswith("error: docs/nested.pdf: ") and "Traceback" not in result.err
    assert "memory_mb = 256" in lines[0] or "cpu_seconds = 20" in lines[0] or "crashed" in lines[0], lines[0]
    assert lines[1].startswith("hint: ") and len(lines) == 2
    samples.write_pdf(docs / "report.pdf", 3, FACT, fact_page=2)
    result = _run(rlm_cli, rlm_script([FIND, "FINAL_VAR(found)"]), "docs")
    assert result.code == 0 and json.loads(result.out)["final_response"] == '["report.pdf#p2"]'
    assert "skipped 1 file(s) no context loader could read: nested.pdf (" in result.err


def test_plugins_list_and_doctor_show_the_loaders(rlm_cli):
    listed = rlm_cli("plugins", "list", plugins="rlm-context-documents")
    assert "context_loader:docx, epub, html, pdf, pptx, xlsx" in listed.out.replace(" ", "").replace(",", ", ")
    assert "loaded in" not in listed.out, "the plugin's start-up stays cheap (its libraries load when used)"


def test_doctor_lists_each_loaders_limits(rlm_cli, monkeypatch):
    monkeypatch.setenv("RLM_CONTEXT_LOADER__PDF__MEMORY_MB", "512")
    doctor = rlm_cli("plugins", "doctor", "--json", plugins="rlm-context-documents")
    rows = {row["name"]: row for row in json.loads(doctor.out)["checks"] if row["kind"] == "context_loader"}
    assert rows["pdf"]["ok"] and "limits: 512 MB memory, 120 s CPU, 180 s wall" in rows["pdf"]["detail"]
    assert "limits: 1024 MB memory" in rows["epub"]["detail"] and "ZIP ≤ 512 MB unpacked" in rows["epub"]["detail"]
    assert "≤ 50,000,000 chars (20,000,000 per part), ≤ 20,000 parts" in rows["docx"]["detail"]
