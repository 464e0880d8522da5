"""The reward profile (the seeds' RLMRewardProfile): named weights, clamping and the global scale.

Every environment computes a raw reward per step from these weights; the runner clamps it to [-1, 1] and
multiplies by ``global_scale``. Configure in ``rlm.toml`` under ``[rewards]``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RewardProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    run_python_base: float = Field(0.1, description="any executed code step")
    run_python_success_bonus: float = Field(0.7, description="the code ran without error")
    run_python_failure_penalty: float = Field(0.3, description="the code raised or timed out")
    run_python_stderr_penalty: float = Field(0.1, description="the code wrote to stderr")
    final_reward: float = Field(1.0, description="the step that gives the final answer")
    no_action_penalty: float = Field(0.1, description="a reply with neither code nor a final answer")
    cycle_guard_penalty: float = Field(-0.25, description="a delegation refused by the cycle guard")
    global_scale: float = Field(1.0, ge=0, description="multiplies every clamped step reward")

    @staticmethod
    def clamp(value: float) -> float:
        return max(-1.0, min(1.0, float(value)))

    def apply_global_scale(self, raw: float) -> float:
        """The reward the runner records: clamped to [-1, 1], then scaled."""
        return self.clamp(raw) * self.global_scale

    def code_step(self, *, ok: bool, stderr: bool) -> float:
        """The seeds' run_python formula: base + success bonus, or − failure penalty; − stderr penalty."""
        reward = self.run_python_base
        reward += self.run_python_success_bonus if ok else -self.run_python_failure_penalty
        if stderr:
            reward -= self.run_python_stderr_penalty
        return self.clamp(reward)
