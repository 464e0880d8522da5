from pydantic import BaseModel, ConfigDict, Field


class BoxSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_mb: int = Field(256, ge=16)
    network: bool = False
