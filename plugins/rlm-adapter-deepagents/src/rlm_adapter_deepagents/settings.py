"""``[framework.deepagents]``: validated at every settings load, so this module imports pydantic and the
frameworks kit only. The event rewards (``reward_tool_call``…) are the fields of its base, ``FrameworkRewards``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

from pydantic import ConfigDict, Field, model_validator
from rlm_host.sdk.frameworks import FrameworkRewards


class DeepAgentsSettings(FrameworkRewards):
    """The settings of the ``deepagents`` framework."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["state", "filesystem", "local_shell"] = Field(
        "state",
        description="where the agent's file tools (ls, read_file, write_file, edit_file, glob, grep) work: 'state' "
                    "(deepagents' in-memory files, gone with the run), 'filesystem' (the folder `root`, on the host, "
                    "confined to it) or 'local_shell' (a shell and files INSIDE the run's sandbox session: the "
                    "`execute` tool runs `sh -c` there, never on the host)",
    )
    root: Optional[Path] = Field(None, description="the folder of the 'filesystem' backend (required for it; relative "
                                                   "paths are resolved from the working directory)")
    shell_timeout: float = Field(60.0, gt=0, le=3600,
                                 description="seconds an `execute` command may run in the sandbox ('local_shell')")
    planning: bool = Field(True, description="offer the write_todos planning tool (LangChain's TodoListMiddleware)")
    brief_tool_descriptions: bool = Field(
        False, description="describe each tool to the model by the first paragraph of its description only "
                           "(deepagents' own tools take ~11k characters; for small context windows)"
    )
    max_output_chars: int = Field(8000, ge=200, description="characters of a run_code result shown to the model")
    preview_chars: int = Field(200, ge=0, le=2000, description="characters of the context's preview in the "
                                                               "system prompt (0: none)")
    invalid_reply_retries: int = Field(3, ge=0, le=50, description="times a malformed reply (JSON that is neither a "
                                                                   "tool call nor an answer) is sent back to the "
                                                                   "model in one run")
    instructions: str = Field("", description="extra instructions appended to the agent's system prompt")

    @model_validator(mode="after")
    def _backend_fits(self) -> "DeepAgentsSettings":
        if self.backend == "filesystem" and self.root is None:
            raise ValueError("backend = 'filesystem' needs `root`: the folder the agent's file tools are confined to")
        if self.backend != "filesystem" and self.root is not None:
            raise ValueError("`root` is only used by backend = 'filesystem'")
        return self
