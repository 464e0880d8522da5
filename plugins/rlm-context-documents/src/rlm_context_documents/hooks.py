"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import ContextLoaderSpec, hookimpl

SETTINGS = "rlm_context_documents.settings:DocumentSettings"  # [context_loader.<name>]
HINT = "pip install rlm-context-documents"


def _check(requires):
    """The doctor's check of a loader: its libraries, and the limits it reads files under (from its section)."""

    def check(settings=None):
        from rlm_context_documents.settings import readiness

        return readiness(requires, settings)

    return check


@hookimpl
def rlm_register_context_loaders():
    def spec(name, description, factory, suffixes, mime_types, *requires):
        return ContextLoaderSpec(name, description, f"rlm_context_documents.{factory}", suffixes=suffixes,
                                 mime_types=mime_types, settings=SETTINGS, requires=requires, install_hint=HINT,
                                 check=_check(requires))

    office = "application/vnd.openxmlformats-officedocument."

    return [
        spec("pdf", "A PDF, one document per page (report.pdf#p12), through PDFium", "pdf:PdfLoader",
             (".pdf",), ("application/pdf",), "pypdfium2"),
        spec("docx", "A Word document as text (headings, lists, tables)", "office:DocxLoader", (".docx",),
             (office + "wordprocessingml.document",), "docx"),
        spec("pptx", "A PowerPoint deck, one document per slide (deck.pptx#s3) with notes", "office:PptxLoader",
             (".pptx",), (office + "presentationml.presentation",), "pptx"),
        spec("xlsx", "An Excel workbook, one document per sheet, rows tab-separated", "office:XlsxLoader",
             (".xlsx", ".xlsm"), (office + "spreadsheetml.sheet", "application/vnd.ms-excel.sheet.macroenabled"),
             "openpyxl"),
        spec("html", "An HTML page as its readable text (no markup, scripts or styles)", "web:HtmlLoader",
             (".html", ".htm", ".xhtml"), ("text/html", "application/xhtml+xml")),
        spec("epub", "An EPUB book, one document per chapter in reading order (book.epub#c4)", "web:EpubLoader",
             (".epub",), ("application/epub+zip",)),
    ]
