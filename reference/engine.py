"""The reference engine's business rules, behind the HTTP app (DEF, DRY, AUTH, PRO-01/02).

Each rule is one method, so a known-bad variant (reference/mutants) subclasses `Engine` and
replaces exactly one: the body parser, a validator, the permission check, the projector. The
HTTP layer only authenticates, reads bytes and renders answers. Checks run in the order
401 → 403 → 404 → 422; where the resource is named inside the body (dry-run), it is looked up
before the rest of the body is validated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from typing import Any, ClassVar, TypeVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError
from referencing import Registry

from arck.reference.auth import (
    CONFIG_READ,
    CONFIG_WRITE,
    DEV_CREDENTIALS,
    DRY_RUN,
    EXECUTOR_CONNECT,
    RUNTIME_READ,
    RUNTIME_WRITE,
    TOOLS_EXECUTE,
    Principal,
    authenticate,
)
from arck.reference.canonical import ResultLimitError, check_limits
from arck.reference.capability import ExecutionPolicy, effective
from arck.reference.errors import (
    CapabilityDisabled,
    Forbidden,
    InvalidJSON,
    NotFound,
    PolicyLoosens,
    RemovedField,
    UnknownBinding,
    ValidationFailed,
)
from arck.reference.localpolicy import LocalPolicy, apply, declaration_of, enforced, loosening
from arck.reference.models import (
    DEFAULT_CONTEXT_TOKENS,
    MAX_BUDGET,
    MIN_BUDGET,
    REMOVED_FIELDS,
    AgentVersion,
    AgentVersionCreate,
    Binding,
    BindingCreate,
    ContextPreview,
    DryRunRequest,
    DryRunResponse,
    PublishedTool,
    ToolDefinition,
    ToolSet,
    ToolSetCreate,
    find_removed_field,
    pointer,
    validation_failed,
)
from arck.reference.openapi import ImportedOperation, read_operations
from arck.reference.openapi_wire import OpenApiImport, OpenApiImportCreate, OperationImported
from arck.reference.projection import Projector
from arck.reference.runtime.wire import Channel, ChannelCreate
from arck.reference.store import Store
from arck.reference.strictjson import MAX_DEPTH, StrictJSONError, loads_strict

__all__ = ["BODY_DEPTH", "BODY_LIMIT", "Engine"]

BODY_LIMIT = 8 * 1024 * 1024  # PRO-02: bodies over 8 MiB are refused with 413
# A value (a result, arguments, a schema) may nest 512 levels (BUD-23); the body around it adds
# a few, so a result at the limit can be sent and one over it is refused by name with 422.
BODY_DEPTH = MAX_DEPTH + 8
_M = TypeVar("_M", bound=BaseModel)
# No retrieval: jsonschema's default registry fetches remote `$ref`s over the network, which
# would let a tool author make the engine request any URL. Unknown references are refused.
_OFFLINE: Registry[Any] = Registry()


def _no_executor(token: str) -> Principal | None:
    return None


class Engine:
    """Bindings, tool sets, agent versions and dry-runs for the tenants of one store."""

    min_budget: ClassVar[int] = MIN_BUDGET
    max_budget: ClassVar[int] = MAX_BUDGET
    body_limit: ClassVar[int] = BODY_LIMIT
    body_depth: ClassVar[int] = BODY_DEPTH
    # The permissions each operation needs, any one of them (profile wire table).
    permissions: ClassVar[Mapping[str, frozenset[str]]] = {
        "publish_binding": frozenset({CONFIG_WRITE}),
        "get_binding": frozenset({CONFIG_READ}),
        "get_binding_policy": frozenset({CONFIG_READ}),
        "set_local_policy": frozenset({CONFIG_WRITE}),
        "publish_tool_set": frozenset({CONFIG_WRITE}),
        "import_openapi": frozenset({CONFIG_WRITE}),
        "get_tool_set": frozenset({CONFIG_READ}),
        "publish_version": frozenset({CONFIG_WRITE}),
        "get_version": frozenset({CONFIG_READ}),
        "dry_run": DRY_RUN,
        "health": frozenset(),
        # Runs (docs/runs.md).
        "publish_channel": frozenset({CONFIG_WRITE}),
        "get_channel": frozenset({CONFIG_READ}),
        "create_wallet": frozenset({CONFIG_WRITE}),
        "deposit": frozenset({CONFIG_WRITE}),
        "get_wallet": frozenset({CONFIG_READ, RUNTIME_READ}),
        "create_session": frozenset({RUNTIME_WRITE}),
        "get_session": frozenset({RUNTIME_READ}),
        "create_run": frozenset({RUNTIME_WRITE}),
        "get_run": frozenset({RUNTIME_READ}),
        "cancel_run": frozenset({RUNTIME_WRITE}),
        "append_input": frozenset({RUNTIME_WRITE}),
        "revoke_tool": frozenset({CONFIG_WRITE}),
        # Executors (docs/executors.md): registered and read with service credentials; a
        # business cancel request is a runtime write over the call's agent.
        "register_executor": frozenset({CONFIG_WRITE}),
        "get_executor": frozenset({CONFIG_READ}),
        "cancel_tool_call": frozenset({RUNTIME_WRITE}),
    }
    # The executor API: executor credentials only, each operation needing this permission.
    executor_permissions: ClassVar[Mapping[str, frozenset[str]]] = {
        "heartbeat": frozenset({EXECUTOR_CONNECT}),
        "candidates": frozenset({EXECUTOR_CONNECT}),
        "executor_call": frozenset({EXECUTOR_CONNECT}),
        "claim": frozenset({TOOLS_EXECUTE}),
        "submit_receipt": frozenset({TOOLS_EXECUTE}),
        "detach": frozenset({TOOLS_EXECUTE}),
    }

    def __init__(
        self,
        store: Store | None = None,
        *,
        database: str = ":memory:",
        credentials: Mapping[str, Principal] = DEV_CREDENTIALS,
        projector: Projector | None = None,
    ) -> None:
        self.store = store if store is not None else Store(database)
        self.credentials = credentials
        self.projector = projector if projector is not None else Projector()
        # Executor tokens live in the store; the app that knows the secret installs the
        # lookup (reference/runtime/executors.py). Without it no executor token is known.
        self.find_executor: Callable[[str], Principal | None] = _no_executor

    # -- callers -------------------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Principal:
        return authenticate(authorization, self.credentials, self.find_executor)

    def authorize(
        self,
        principal: Principal,
        permissions: Set[str],
        agent_id: str | None,
        *,
        path: str = "agent_id",
    ) -> None:
        """403 unless the caller holds one of `permissions` (if any) and covers `agent_id`;
        an executor credential is refused whatever it holds (docs/executors.md)."""
        if principal.executor_id is not None:
            raise Forbidden("executor credentials serve only the executor API", "Authorization")
        if permissions and not permissions & principal.permissions:
            wanted = " or ".join(sorted(permissions))
            raise Forbidden(f"the credential lacks the permission {wanted}", "Authorization")
        if agent_id is not None and not principal.covers(agent_id):
            # DRY-06: the message names nothing of the resource.
            raise Forbidden("the credential's agent scope does not cover this agent", path)

    def authorize_executor(self, principal: Principal, permissions: Set[str]) -> None:
        """403 unless the caller is an executor holding one of `permissions` (EXE-04)."""
        if principal.executor_id is None:
            raise Forbidden("an executor credential is needed", "Authorization")
        if not permissions & principal.permissions:
            wanted = " or ".join(sorted(permissions))
            raise Forbidden(f"the executor credential lacks the permission {wanted}",
                            "Authorization")

    # -- bodies --------------------------------------------------------------------------------

    def parse_body(self, body: bytes) -> Any:
        """PRO-01: strict JSON, or 400 `invalid_json`."""
        try:
            return loads_strict(body, max_depth=self.body_depth)
        except StrictJSONError as exc:
            raise InvalidJSON(f"the body is not strict JSON: {exc.message}", exc.path) from None

    def _validate(self, model: type[_M], data: object, **context: Any) -> _M:
        try:
            return model.model_validate(data, strict=True, context=context)
        except ValidationError as exc:
            raise validation_failed(exc) from None

    def validate_binding(self, data: object) -> BindingCreate:
        return self._validate(BindingCreate, data)

    def validate_tool_set(self, data: object) -> ToolSetCreate:
        """DEF-01..03: removed settings first (422 `removed_field`), then the strict model."""
        found = find_removed_field(data)
        if found is not None:
            path, name = found
            raise RemovedField(
                f"{path}: {REMOVED_FIELDS[name]} and has no alias; "
                "set max_result_context_bytes (bytes, 1024..32768) instead",
                path,
            )
        return self._validate(
            ToolSetCreate, data, min_budget=self.min_budget, max_budget=self.max_budget
        )

    def validate_version(self, data: object) -> AgentVersionCreate:
        return self._validate(AgentVersionCreate, data)

    def validate_dry_run(self, data: object) -> DryRunRequest:
        return self._validate(DryRunRequest, data)

    # -- configuration -------------------------------------------------------------------------

    def publish_binding(self, principal: Principal, data: object) -> Binding:
        request = self.validate_binding(data)
        declared = request.capability
        return self.store.add_binding(
            principal.tenant, request.name, request.description,
            declared.model_dump(exclude_unset=True) if declared is not None else None)

    def binding_policy(self, principal: Principal, binding_id: str) -> ExecutionPolicy:
        """CAP-04, CAP-09: what the platform enforces for the binding's operation: the
        declaration's policy, tightened by the local one."""
        binding = self.get_binding(principal, binding_id)
        return enforced(binding, self.store.local_policy(binding_id))

    def set_local_policy(
        self, principal: Principal, binding_id: str, data: object
    ) -> ExecutionPolicy:
        """CAP-09: a local policy replaces the last one only when it loosens nothing."""
        binding = self.get_binding(principal, binding_id)
        local = self._validate(LocalPolicy, data)
        declared = effective(binding_id, declaration_of(binding))
        found = self.loosens(local, declared)
        if found is not None:
            path, why = found
            raise PolicyLoosens(f"{path}: {why}", path)
        self.store.set_local_policy(binding_id, local.model_dump(exclude_unset=True))
        return apply(declared, local)

    def loosens(self, local: LocalPolicy, declared: ExecutionPolicy) -> tuple[str, str] | None:
        """The local setting that would loosen the declared policy (a mutant's seam)."""
        return loosening(local, declared)

    def get_binding(self, principal: Principal, binding_id: str) -> Binding:
        binding = self.store.binding(principal.tenant, binding_id)
        if binding is None:
            raise NotFound("no binding with this id", "binding_id")
        return binding

    def publish_tool_set(self, principal: Principal, data: object) -> ToolSet:
        """DEF-02..06: validate, check every binding, then store the tool set immutably."""
        request = self.validate_tool_set(data)
        for i, tool in enumerate(request.tools):
            self.check_binding(principal, tool.binding_id, f"/tools/{i}/binding_id")
        tools = [PublishedTool.model_validate(tool.model_dump()) for tool in request.tools]
        return self.store.add_tool_set(principal.tenant, request.name, tools)

    def import_openapi(self, principal: Principal, data: object) -> OpenApiImport:
        """CAP-15: a binding and a tool per operation declared `enabled: true`, one tool set
        of them, all in one commit; every other operation listed with why it is not one."""
        request = self._validate(OpenApiImportCreate, data)
        found = self.read_operations(request.document)
        bindings: list[Binding] = []
        tools: list[PublishedTool] = []
        for operation in found:
            if operation.status != "imported" or operation.declaration is None:
                continue
            scope = operation.declaration.scope
            bindings.append(Binding(binding_id="", name=scope,
                                    description=operation.description,
                                    capability=operation.declaration.model_dump(
                                        exclude_unset=True)))
            tool = self._validate_at(ToolDefinition, {
                "name": scope, "description": operation.description, "binding_id": "",
                "input_schema": operation.input_schema,
                "output_schema": operation.output_schema}, f"/document{operation.pointer}")
            tools.append(PublishedTool.model_validate(tool.model_dump()))
        tool_set = self.store.add_imported(principal.tenant, request.name, bindings, tools)
        by_tool = {tool.name: tool.binding_id for tool in tool_set.tools}
        listed = []
        for op in found:
            tool_name = op.declaration.scope if op.status == "imported" and op.declaration \
                else None
            listed.append(OperationImported(
                pointer=op.pointer, method=op.method, path=op.path, operation_id=op.operation_id,
                status=op.status, binding_id=by_tool[tool_name] if tool_name else None,
                tool=tool_name))
        return OpenApiImport(tool_set=tool_set, operations=listed)

    def read_operations(self, document: dict[str, Any]) -> list[ImportedOperation]:
        """The document's operations as the importer reads them (a mutant's seam)."""
        return read_operations(document)

    @staticmethod
    def _validate_at(model: type[_M], data: object, path: str) -> _M:
        """`data`, built from what is at `path`, validated; an error names `path`."""
        try:
            return model.model_validate(data, strict=True)
        except ValidationError as exc:
            error = exc.errors(include_url=False, include_input=False)[0]
            built = ".".join(str(part) for part in error["loc"])
            raise ValidationFailed(f"{path}: the tool's {built} built from this operation is "
                                   f"not valid: {error['msg']}", path) from None

    def check_binding(self, principal: Principal, binding_id: str, path: str) -> None:
        """DEF-06: the binding must be registered for the caller's tenant; CAP-02: and its
        operation agent-facing (a declaration that does not say `enabled: true` keeps it
        from every model's tools, so no tool set may name it)."""
        binding = self.store.binding(principal.tenant, binding_id)
        if binding is None:
            raise UnknownBinding(f"{path}: no registered binding {binding_id[:64]!r}", path)
        if not effective(binding_id, declaration_of(binding)).agent_facing:
            raise CapabilityDisabled(
                f"{path}: binding {binding_id!r} declares its operation not enabled for "
                "agents (capability.enabled is not true): no tool may name it", path)

    def get_tool_set(
        self, principal: Principal, tool_set_id: str, *, path: str = "tool_set_id"
    ) -> ToolSet:
        tool_set = self.store.tool_set(principal.tenant, tool_set_id)
        if tool_set is None:
            raise NotFound("no tool set with this id", path)
        return tool_set

    def publish_version(self, principal: Principal, agent_id: str, data: object) -> AgentVersion:
        """Resources named in the body are looked up (404) before the rest is validated
        (422), as for a dry-run (profile: 401 → 403 → 404 → 422)."""
        if isinstance(data, dict):
            for name, find in (("tool_set_id", self.get_tool_set),
                               ("channel_id", self.get_channel),
                               ("summary_channel_id", self.get_channel)):
                if isinstance(data.get(name), str):
                    find(principal, data[name], path=f"/{name}")
        request = self.validate_version(data)
        self.get_tool_set(principal, request.tool_set_id, path="/tool_set_id")
        for name in ("channel_id", "summary_channel_id"):
            channel_id = getattr(request, name)
            if channel_id is not None:
                self.get_channel(principal, channel_id, path=f"/{name}")
        if request.channel_id is None and (
            request.summary_channel_id is not None or request.max_context_tokens is not None
        ):
            raise ValidationFailed(
                "/channel_id: required with the other run settings", "/channel_id"
            )
        context = request.max_context_tokens
        if request.channel_id is not None and context is None:
            context = DEFAULT_CONTEXT_TOKENS  # RUN-05
        return self.store.add_version(
            principal.tenant,
            agent_id,
            request.tool_set_id,
            request.system_prompt,
            channel_id=request.channel_id,
            summary_channel_id=request.summary_channel_id,
            max_context_tokens=context,
        )

    def publish_channel(self, principal: Principal, data: object) -> Channel:
        request = self._validate(ChannelCreate, data)
        if request.output_capacity >= request.total_capacity:
            raise ValidationFailed(
                "/output_capacity: must be below total_capacity", "/output_capacity"
            )
        return self.store.add_channel(principal.tenant, request)

    def get_channel(
        self, principal: Principal, channel_id: str, *, path: str = "channel_id"
    ) -> Channel:
        channel = self.store.channel(principal.tenant, channel_id)
        if channel is None:
            raise NotFound("no channel with this id", path)
        return channel

    def get_version(
        self, principal: Principal, version_id: str, *, path: str = "agent_version"
    ) -> AgentVersion:
        """404 for an unknown version or another tenant's; 403 outside the caller's scope."""
        version = self.store.version(principal.tenant, version_id)
        if version is None:
            raise NotFound("no agent version with this id", path)
        self.authorize(principal, frozenset(), version.agent_id, path=path)
        return version

    # -- dry-run -------------------------------------------------------------------------------

    def find_tool(
        self, principal: Principal, version: AgentVersion, tool_name: str
    ) -> PublishedTool:
        tool_set = self.get_tool_set(principal, version.tool_set_id, path="/agent_version")
        for tool in tool_set.tools:
            if tool.name == tool_name:
                return tool
        raise NotFound("no tool with this name in the agent version", "/tool_name")

    def dry_run_body(self, principal: Principal, data: object) -> DryRunResponse:
        """Look up the version and tool named in the body (403/404) before validating it (422)."""
        if isinstance(data, dict) and isinstance(data.get("agent_version"), str):
            version = self.get_version(principal, data["agent_version"], path="/agent_version")
            if isinstance(data.get("tool_name"), str):
                self.find_tool(principal, version, data["tool_name"])
        return self.dry_run(principal, self.validate_dry_run(data))

    def dry_run(self, principal: Principal, request: DryRunRequest) -> DryRunResponse:
        """DRY-01..07: preview the first completed mock receipt; run, call and dispatch nothing."""
        version = self.get_version(principal, request.agent_version, path="/agent_version")
        tool = self.find_tool(principal, version, request.tool_name)
        self.check_arguments(tool, request.arguments)
        for i, receipt in enumerate(request.mock_receipts):
            self.check_result(receipt.result, f"/mock_receipts/{i}/result")
        completed = [r for r in request.mock_receipts if r.kind == "completed"]
        if not completed:
            return DryRunResponse(context_preview=None)
        return DryRunResponse(
            context_preview=self.preview(completed[0].result, tool.max_result_context_bytes)
        )

    def check_arguments(self, tool: PublishedTool, arguments: dict[str, Any]) -> None:
        """DRY-05: arguments must match the tool's input_schema; the error names the path."""
        try:
            validator = Draft202012Validator(tool.input_schema, registry=_OFFLINE)
            error = best_match(validator.iter_errors(arguments))
        except Exception as exc:
            # A published schema can still break the validator on some instances (an
            # unresolvable $ref, a regex too large for `re`, nesting past the stack): 422.
            raise ValidationFailed(
                f"/arguments: cannot be checked against the tool's input_schema "
                f"({type(exc).__name__})",
                "/arguments",
            ) from None
        if error is not None:
            path = "/arguments" + pointer(list(error.absolute_path))
            raise ValidationFailed(f"{path}: {error.message[:300]}", path)

    def check_result(self, result: Any, path: str) -> None:
        """BUD-23: a result beyond the nesting or digit limit is refused, naming the path."""
        try:
            check_limits(result)
        except ResultLimitError as exc:
            raise ValidationFailed(f"{path}{exc.path}: {exc.message}", path + exc.path) from None

    def preview(self, result: Any, budget: int) -> ContextPreview:
        projected = self.projector.project(result, budget)
        return ContextPreview(
            max_result_context_bytes=budget,
            original_bytes=projected.original_bytes,
            retained_bytes=projected.retained_bytes,
            truncated=projected.truncated,
            result=projected.result,
        )

    def close(self) -> None:
        self.store.close()
