"""Helpers of the authors' package that code written for it imports (``rlm.utils.exceptions``)."""
