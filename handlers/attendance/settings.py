"""Every environment variable the attendance service reads, typed and checked at start-up.

Built once in `create()` with `setup.read(AttendanceSettings)`; a bad value stops the server with
the variable's name. The only variables are those of the optional LLM fallback (core/llm.py): with
ATTENDANCE_LLM_BASE_URL unset the service parses with its grammar alone.
"""

from __future__ import annotations

from pydantic import SecretStr

from handlers.attendance.core.llm import LlmConfig
from kumitate.settings import ServiceSettings, var


class AttendanceSettings(ServiceSettings):
    """attendance's settings (the README's settings table lists them)."""

    llm_base_url: str | None = var(
        "ATTENDANCE_LLM_BASE_URL",
        None,
        "OpenAI-compatible endpoint (`…/v1`) asked when the grammar is unsure of a parse",
        "none (rules only)",
        pattern=r"^https?://\S+$",
        max_length=2048,
    )
    llm_model: str = var(
        "ATTENDANCE_LLM_MODEL", "", "model name sent to that endpoint", "none (the endpoint's default)", max_length=256
    )
    llm_api_key: SecretStr | None = var(
        "ATTENDANCE_LLM_API_KEY", None, "bearer token for that endpoint", "none (no Authorization header)"
    )

    def llm_config(self) -> LlmConfig | None:
        """The fallback model's configuration; None when ATTENDANCE_LLM_BASE_URL is unset (the fallback is off)."""
        if self.llm_base_url is None:
            return None
        return LlmConfig(
            base_url=self.llm_base_url.rstrip("/"),
            model=self.llm_model,
            api_key=self.llm_api_key,
        )
