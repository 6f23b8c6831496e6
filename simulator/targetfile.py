"""The target file: where a target is, how to authenticate, what it declares, how to be safe.

```toml
[target]
name = "acme-runtime"
base_url = "https://runtime.staging.example"   # or: adapter = "mypkg.arck_adapter:Adapter"
profile = "core"                 # "reference" to also be checked against the reference profile
capabilities = []
restart = "systemctl restart acme-runtime"   # optional: kill and start again (RUN-02)

[credentials]                    # "env:NAME" reads the token from the environment
full = "env:ACME_TOKEN_FULL"     # every permission, scope on agents named with the prefix
read_only = "env:ACME_TOKEN_RUNTIME_READ"
config_read = "env:ACME_TOKEN_CONFIG_READ"
no_permission = "env:ACME_TOKEN_NOPERM"
no_scope = "env:ACME_TOKEN_NOSCOPE"      # permissions, but no scope on the prefix's agents
other_tenant = "env:ACME_TOKEN_OTHER"

[safety]
tenant = "arck-conformance"
name_prefix = "arck-"
max_requests_per_second = 20
destructive = false              # whole-body fuzzing and schemathesis need true
timeout_seconds = 30

[provider]                       # checks of runs: arck serves its simulated model provider here
listen = "127.0.0.1:8900"        # the service's OpenAI base URL: http://127.0.0.1:8900/v1
seed = 0                         # optional: the seed of the provider's default answers
```
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from arck.simulator.errors import UsageError

ROLES = ("full", "read_only", "config_read", "no_permission", "no_scope", "other_tenant")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TargetSection(_Strict):
    name: str = "target"
    base_url: str | None = None
    adapter: str | None = None
    app: str | None = None  # dotted path to an ASGI app factory, run in-process
    profile: Literal["core", "reference"] = "core"
    capabilities: list[str] = Field(default_factory=list)
    # A command (split as a shell would, run without one) that kills the service and starts
    # it again on the same stored state; arck waits for it, then for /v1/health (RUN-02).
    restart: str | None = None

    @field_validator("restart")
    @classmethod
    def _command(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                words = shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"{value!r} is not a command line: {exc}") from None
            if not words:
                raise ValueError("an empty command; leave `restart` out instead")
        return value

    @model_validator(mode="after")
    def _one_location(self) -> TargetSection:
        given = [k for k in ("base_url", "adapter", "app") if getattr(self, k)]
        if len(given) > 1:
            raise ValueError(f"give one of base_url, adapter, app; got {', '.join(given)}")
        return self


class Credentials(_Strict):
    full: str | None = None
    read_only: str | None = None
    config_read: str | None = None
    no_permission: str | None = None
    no_scope: str | None = None
    other_tenant: str | None = None


class Safety(_Strict):
    tenant: str | None = None
    name_prefix: str = "arck-"
    max_requests_per_second: float | None = Field(default=None, gt=0)
    destructive: bool = False
    timeout_seconds: float = Field(default=30.0, gt=0)


_LISTEN = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(?P<port>[0-9]{1,5})")


class ProviderSection(_Strict):
    """Where arck serves its simulated model provider for the checks of runs (docs/targets.md).

    The service under test must call `http://<listen>/v1` as its OpenAI base URL.
    """

    listen: str
    seed: int = 0

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str) -> str:
        match = _LISTEN.fullmatch(value)
        if match is None or not 1 <= int(match["port"]) <= 65535:
            raise ValueError(
                f"{value!r} is not HOST:PORT with a port 1..65535 (e.g. \"127.0.0.1:8900\")"
            )
        return value

    @property
    def host(self) -> str:
        host = self.listen.rpartition(":")[0]
        return host[1:-1] if host.startswith("[") else host

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @property
    def base_url(self) -> str:
        """What the service calls: `http://<listen>/v1`."""
        return f"http://{self.listen}/v1"


class TargetFile(_Strict):
    target: TargetSection = Field(default_factory=TargetSection)
    credentials: Credentials = Field(default_factory=Credentials)
    safety: Safety = Field(default_factory=Safety)
    provider: ProviderSection | None = None

    def token(self, role: str) -> str | None:
        """The token for a role, with `env:NAME` resolved; None when not configured."""
        raw: str | None = getattr(self.credentials, role)
        if raw is None or not raw.startswith("env:"):
            return raw
        name = raw[4:]
        value = os.environ.get(name)
        if value is None:
            raise UsageError(f"credentials.{role}: environment variable {name} is not set")
        return value


def load(path: Path) -> TargetFile:
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"target file {str(path)!r} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"target file {str(path)!r} is not valid TOML: {exc}") from None
    try:
        return TargetFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise UsageError(f"target file {str(path)!r}: {problems}") from None
