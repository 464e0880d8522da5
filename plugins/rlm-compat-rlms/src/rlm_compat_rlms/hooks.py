"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host`` (and the
package's light ``__init__``)."""

from rlm_host import EnvironmentSpec, ExporterSpec, hookimpl


@hookimpl
def rlm_register_exporters():
    return [
        ExporterSpec(
            "rlms",  # rlm runs export RUN --format rlms
            "The log of the authors' rlms package (RLMLogger's JSON lines), which its web visualiser opens",
            "rlm_compat_rlms.log_format:create",
        )
    ]


@hookimpl
def rlm_register_environments():
    return [
        EnvironmentSpec(
            "rlms",  # rlm_compat_rlms.RLM runs it; rlm run --env rlms too
            "The authors' rlms loop: answer['ready'] or FINAL ends it; context_N, history_N, rlm_query(prompt, model)",
            "rlm_compat_rlms.loop.environment:create",
            settings="rlm_compat_rlms.loop.settings:RlmsLoopSettings",  # [environment.rlms]
        )
    ]
