"""``python -m rlm_compat_rlms.standin``: print the folder whose ``rlm`` package is the stand-in, for
``PYTHONPATH="$(python -m rlm_compat_rlms.standin)" python my_rlms_program.py``."""

from rlm_compat_rlms.standin import STANDIN_DIR

print(STANDIN_DIR)
