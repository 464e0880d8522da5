"""rlm-env-generic: the ``generic`` environment, RLM Code's JSON actions with its reward formula.

``GenericEnvironment``, ``GenericSettings`` and the action schema live in ``rlm_env_generic.environment``
(imported when a run uses the environment, not at ``rlm`` start).
"""

PLUGIN_NAME = "rlm-env-generic"
