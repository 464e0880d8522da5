"""Built-in doctor checks: the Python version, the configuration files, the run home."""

from __future__ import annotations

from rlm_host.components import DoctorCheck
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_doctor_checks() -> list[DoctorCheck]:
    return [
        DoctorCheck("python", "Python version supported by rlm-host", "rlm_host.checks:python_version"),
        DoctorCheck("config", "configuration files parse and validate", "rlm_host.checks:config_valid"),
        DoctorCheck("home", "run directory (.rlm or $RLM_HOME) is writable", "rlm_host.checks:home_writable"),
    ]
