"""Doctor checks of the plugin: each returns a Readiness and never raises."""

import rlm_host
from rlm_host import Readiness

from rlm_plugin_template import MIN_HOST_VERSION, PLUGIN_NAME


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def host_compatible() -> Readiness:
    found = rlm_host.__version__
    needed = ".".join(map(str, MIN_HOST_VERSION))
    if _release(found) < MIN_HOST_VERSION:
        return Readiness(False, f"rlm-host {found} is older than {needed}", f"pip install -U 'rlm-host>={needed}'")
    return Readiness(True, f"rlm-host {found} (needs >= {needed}) for {PLUGIN_NAME}")
