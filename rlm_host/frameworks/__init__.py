"""Frameworks' contract (``protocol``) and the run's sandbox as tools (``tools``): what a plugin needs to run a
task through another agent framework as an rlm run. Plugins import these names from ``rlm_host.sdk.frameworks``."""
