"""The machinery of every settings class: environment variables read once, typed (pydantic-settings).

`EnvSettings` reads the fields a class declares with `var` from one mapping (the process environment,
or a test's dict); the runtime's `Settings` (kumitate.settings) is built from the config groups of
this package, and a service's `ServiceSettings` subclass the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationError
from pydantic.config import JsonDict
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

__all__ = ["CommaList", "EnvSettings", "ServiceSettings", "SettingsError", "invalid_variables", "var"]


def _comma_list(value: object) -> object:
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]
"""`a,b,c` in the environment; blanks dropped."""


def var(name: str, default: object, doc: str, shown: str | None = None, **constraints: Any) -> Any:  # noqa: ANN401  (as pydantic.Field)
    """A setting read from the variable `name`; `shown` is the default as the README table says it.

    Typed as pydantic's `Field` is: it stands as the default of a field of any type, and `constraints`
    go to `Field` as they are (each of its keywords has its own type)."""
    extra: JsonDict | None = {"shown": shown} if shown is not None else None
    return Field(default, validation_alias=name, description=doc, json_schema_extra=extra, **constraints)


def invalid_variables(error: ValidationError) -> list[str]:
    """`VARIABLE: what is wrong`, one per refused value (the loc of a settings error is the variable)."""
    return [f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()]


class SettingsError(ValueError):
    """A service's settings refused a value: one line naming the service and each variable."""

    def __init__(self, service: str, error: ValidationError) -> None:
        super().__init__(f"service {service!r}: {'; '.join(invalid_variables(error))}")


class EnvSettings(BaseSettings):
    """Settings read from environment variables named by each field's alias; empty means unset."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, validate_by_name=True, env_ignore_empty=True)
    _env: Mapping[str, str] = PrivateAttr(default_factory=lambda: dict(os.environ))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values given: `from_env` reads the one mapping it was handed, so a test's dict
        is the whole environment (pydantic-settings would otherwise fill gaps from os.environ)."""
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Self:
        """From `env` alone when given (a test's dict), else the process environment; `overrides`
        (field names) win, as the command line does over HOST and PORT."""
        source = dict(os.environ if env is None else env)
        names = {f.validation_alias for f in cls.model_fields.values()}
        values: dict[str, object] = {k: v for k, v in source.items() if k in names and v != ""}
        values |= {str(cls.model_fields[k].validation_alias): v for k, v in overrides.items() if v is not None}
        settings: Self = cls.model_validate(values)
        settings._env = source  # its own private attribute, set by its own class
        return settings

    @property
    def env(self) -> Mapping[str, str]:
        """The variables these settings were read from (a service builds its own settings from them)."""
        return self._env

    @classmethod
    def variables(cls) -> list[tuple[str, str, str]]:
        """(variable, default as shown, what) per field, in declaration order."""
        rows = []
        for field in cls.model_fields.values():
            if not isinstance(field.validation_alias, str):
                continue
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            shown = extra.get("shown")
            if shown is None:
                default = field.default
                shown = "off" if default is False else "none" if default in (None, ()) else f"`{default}`"
            rows.append((field.validation_alias, str(shown), field.description or ""))
        return rows


class ServiceSettings(EnvSettings):
    """Base of a service's own settings class (see the module docstring)."""
