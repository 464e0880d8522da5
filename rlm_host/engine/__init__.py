"""The RLM engine: the run loop, its budgets, rewards and recursion."""
