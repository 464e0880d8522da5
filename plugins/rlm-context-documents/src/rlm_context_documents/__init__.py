"""rlm-context-documents: context loaders for PDF, DOCX, PPTX, XLSX, HTML and EPUB files.

A PDF becomes one document per page (``report.pdf#p12``), a deck one per slide (``#s3``), a workbook one per
sheet (``#Budget``), an EPUB one per chapter (``#c4``); a DOCX or an HTML page is one text. Each file is read in
a child process with memory, CPU-time and time limits and output caps (``extract``, ``rlm_host.bounded``); what it
gives is cached under the run home by the file's content hash, signed with this user's key, so the next run reads
it back instead of extracting again.

The package imports nothing at start (``rlm`` imports ``hooks`` at every start): the loaders and their libraries
load when a file of their format is read.
"""
