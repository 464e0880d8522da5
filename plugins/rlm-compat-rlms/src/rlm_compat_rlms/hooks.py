"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import ExporterSpec, hookimpl


@hookimpl
def rlm_register_exporters():
    return [
        ExporterSpec(
            "rlms",  # rlm runs export RUN --format rlms
            "The log of the authors' rlms package (RLMLogger's JSON lines), which its web visualiser opens",
            "rlm_compat_rlms.log_format:create",
        )
    ]
