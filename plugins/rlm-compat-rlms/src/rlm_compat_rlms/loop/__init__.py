"""The ``rlms`` environment: the loop of the authors' ``RLM`` run by rlm's engine (their REPL names, their way of
finishing, their prompt structure), in any rlm sandbox. ``rlm_compat_rlms.RLM`` runs it; ``rlm run --env rlms``
can too."""
