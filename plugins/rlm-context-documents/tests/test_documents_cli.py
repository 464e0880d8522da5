"""Documents through ``rlm run`` as a user runs it: the model's code finds a fact on a named page of a PDF, in a
DOCX and in an HTML page; a file that cannot be read is one error line and exit 2; in a folder it is skipped with
a warning naming it; the second run of the same file reads the extraction cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_context_documents import testing as samples

PLUGINS = "rlm-context-documents,rlm-sandbox-monty"
FACT = "Thermistor T4 failed at -41.7 C on day 117"
FIND = ("```repl\nfound = [name for name, doc in zip(list_files(), context) if 'T4 failed' in doc.replace(chr(10), ' ')]"
        "\nprint(found)\n```")  # fmt: skip
SEARCH = "```repl\nfound = 'T4 failed' in context.replace(chr(10), ' ')\nprint(found)\n```"


def _run(rlm_cli, model, context, *extra, sandbox="monty"):
    return rlm_cli("run", "Which page says what happened to T4?", "--context", context, "--model", model,
                   "--sandbox", sandbox, "--json", *extra, plugins=PLUGINS)  # fmt: skip


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
])  # fmt: skip
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


def test_the_second_run_reads_the_cache(rlm_cli, rlm_script, rlm_isolated):
    samples.write_pdf(rlm_isolated.work / "report.pdf", 5, FACT, fact_page=4)
    model = rlm_script([FIND, "FINAL_VAR(found)"])
    assert _run(rlm_cli, model, "report.pdf").code == 0
    (entry,) = (rlm_isolated.runs / "cache" / "documents").glob("*.json")
    cached = json.loads(entry.read_text())
    cached["parts"][3][1] = "T4 failed (as the cache says)"  # the second run must read this, not the PDF
    entry.write_text(json.dumps(cached))
    result = _run(rlm_cli, rlm_script([FIND, "FINAL_VAR(found)"]), "report.pdf")
    assert json.loads(result.out)["final_response"] == '["report.pdf#p4"]'


def test_plugins_list_and_doctor_show_the_loaders(rlm_cli):
    listed = rlm_cli("plugins", "list", plugins="rlm-context-documents")
    assert "context_loader:docx, epub, html, pdf, pptx, xlsx" in listed.out.replace(" ", "").replace(",", ", ")
    assert "loaded in" not in listed.out, "the plugin's start-up stays cheap (its libraries load when used)"
