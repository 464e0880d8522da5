"""Print what the mlflow sink recorded: runs (status, nesting, metrics, artifacts) and the last trace's span tree.

    python plugins/rlm-sink-mlflow/scripts/readback.py http://127.0.0.1:5000 [experiment]
"""

import sys

from mlflow import MlflowClient

client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name(sys.argv[2] if len(sys.argv) > 2 else "rlm").experiment_id
for run in client.search_runs([experiment], order_by=["attributes.start_time ASC"]):
    tags, metrics = run.data.tags, run.data.metrics
    if "rlm.benchmark_id" in tags:
        print(f"{run.info.run_name:26} {run.info.status:8} (benchmark run)")
        continue
    parent = tags.get("mlflow.parentRunId", "-")[:8]
    print(f"{run.info.run_name:26} {run.info.status:8} depth={tags['rlm.depth']} parent={parent}"
          f" steps={metrics['steps']:.0f} reward={metrics['total_reward']} tokens={metrics['total_tokens']:.0f}")
    history = client.get_metric_history(run.info.run_id, "cumulative_reward")
    print("   cumulative_reward by step:", [(m.step, m.value) for m in history])
    print("   artifacts:", [a.path for a in client.list_artifacts(run.info.run_id, "trajectory")])
trace = client.search_traces(locations=[experiment], max_results=1)[0]
info = trace.info
print(info.trace_id, info.state, info.request_preview, "->", info.response_preview,
      "source run", info.trace_metadata["mlflow.sourceRun"][:8])
spans = client.get_trace(trace.info.trace_id).data.spans
children = {}
for span in spans:
    children.setdefault(span.parent_id, []).append(span)


def show(span, indent=0):
    print("  " * indent + f"{span.name} [{span.span_type}]")
    for child in children.get(span.span_id, []):
        show(child, indent + 1)


show(children[None][0])
