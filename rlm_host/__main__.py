"""``python -m rlm_host`` is the same as ``rlm``."""

from rlm_host.cli.main import run

run()
