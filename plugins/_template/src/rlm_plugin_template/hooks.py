"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports nothing heavy."""

from rlm_host import CommandSpec, DoctorCheck, hookimpl


@hookimpl
def rlm_register_commands():
    return [CommandSpec("plugin-template", "Commands of the plugin template.", "rlm_plugin_template.commands:app")]


@hookimpl
def rlm_doctor_checks():
    return [
        DoctorCheck(
            "plugin-template-host",
            "rlm-host is recent enough for rlm-plugin-template",
            "rlm_plugin_template.checks:host_compatible",
        )
    ]
