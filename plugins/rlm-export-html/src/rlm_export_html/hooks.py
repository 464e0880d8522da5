"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import ExporterSpec, hookimpl


@hookimpl
def rlm_register_exporters():
    return [ExporterSpec("html", "One self-contained page of the run tree (steps, code, output, sub-calls, child "
                         "runs) that opens in any browser, offline", "rlm_export_html.page:create")]
