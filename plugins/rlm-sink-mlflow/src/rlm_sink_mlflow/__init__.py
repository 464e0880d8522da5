"""The ``mlflow`` sink: RLM runs as MLflow runs and run trees as MLflow traces (see README.md)."""
