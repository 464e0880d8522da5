"""rlm-adapter-dspy: the ``dspy-rlm`` framework (alias ``dspy``), DSPy's own ``dspy.RLM`` loop in an rlm run.

``hooks`` registers the framework (imported at every ``rlm`` start: rlm_host only); ``settings`` holds the
``[framework.dspy-rlm]`` model and the readiness check (no dspy import); ``framework`` builds and drives
``dspy.RLM``; ``models`` are the run's model roles as dspy LMs; ``interpreter`` is dspy's ``CodeInterpreter``
protocol over the run's sandbox session. dspy is imported only by the last three, when a run uses the framework.
"""

PLUGIN_NAME = "rlm-adapter-dspy"
INSTALL_HINT = "pip install rlm-adapter-dspy (it brings dspy>=3.4, which has dspy.RLM)"
