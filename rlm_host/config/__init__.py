"""Settings: pydantic models and the layered sources they are read from, with where each value came from."""

from rlm_host.config.loader import LoadedSettings, load_settings
from rlm_host.config.schema import Settings

__all__ = ["LoadedSettings", "Settings", "load_settings"]
