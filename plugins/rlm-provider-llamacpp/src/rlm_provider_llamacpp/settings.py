"""``[provider.llamacpp]`` in rlm.toml: how local models are loaded and sampled."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_N_CTX = 8192


class LlamaCppSettings(BaseModel):
    """Settings of the ``llamacpp`` provider; ``--max-tokens``-style model options given in code win over them."""

    model_config = ConfigDict(extra="forbid")

    n_ctx: int = Field(
        DEFAULT_N_CTX, ge=256, description="context window in tokens (capped at the model's training context)"
    )
    n_threads: Optional[int] = Field(None, ge=1, description="CPU threads (default: the CPUs this process may use)")
    max_tokens: int = Field(512, ge=1, description="most tokens generated per answer")
    temperature: float = Field(0.0, ge=0, description="sampling temperature (0: greedy, so a run repeats)")
    repeat_penalty: float = Field(
        1.1, ge=1.0, description="penalty on recently generated tokens (1.0: none) in free-text replies; small "
        "models loop without it. Replies held to a grammar get none: the grammar bounds them, and code repeats names"
    )
    seed: int = Field(0, ge=0, description="sampling seed, fixed so that runs repeat")
    prefix_cache: bool = Field(
        False,
        description="reuse the previous call's evaluated prompt prefix: faster for long growing prompts, "
        "but answers then depend on earlier calls",
    )
    model_dir: Optional[str] = Field(
        None, description="directory where relative model names are looked up (llamacpp:NAME[.gguf])"
    )
