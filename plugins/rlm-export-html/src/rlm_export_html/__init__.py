"""rlm-export-html: a saved run tree as one self-contained HTML page (``rlm runs export RUN --format html``)."""
