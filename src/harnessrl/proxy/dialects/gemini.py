"""The Gemini API (`POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
`:countTokens`; also under `/v1/`), and the model list (`GET /v1beta/models[/<name>]`, and
`/v1/models` for Google's clients). Request parsing lives in `gemini_input`; this module holds the
routes, the generation options and the response formats.

The model comes from the path; the API key from `x-goog-api-key` or `?key=`. `:streamGenerateContent`
answers SSE with `?alt=sse` (what the SDKs ask for) and a JSON array otherwise, with the whole turn in
one chunk (pseudo-streaming). Keep-alives: a blank line, in both forms. In SSE it ends no event (no
`data:` line came before it), so no SDK sees anything: the Python SDK skips blank lines, the JS SDK
(Gemini CLI) matches `^\\s*data: ` so leading blank lines fold into the next event. (An SSE comment
line reached the Python SDK as a JSON fragment and failed; an empty `data: {}` event reached user code
as a chunk whose `.text` is None.) In the JSON array a blank line is whitespace between elements.
Errors are Google's shape: `{"error": {"code", "message", "status", "details": [BadRequest
fieldViolations naming the field]}}`, on every path Google owns (`owns`: 404s and 401s included); a
stream that has started ends with one.

`generationConfig`: `maxOutputTokens` honoured; `temperature`, `topP`, `topK`, `seed` and the
penalties ignored (sampling is the trainer's); `responseLogprobs` returns every sampled token's
log-prob (`logprobsResult.chosenCandidates`, `avgLogprobs`); `thinkingConfig.includeThoughts` decides
whether reasoning is returned as `thought` parts; `thinkingBudget` / `thinkingLevel` are accepted as
the guidance Google documents them to be (the model may over- or under-run a budget; Gemini CLI sends
one on every call) and not enforced. Rejected with a 400 naming the field: `candidateCount` > 1,
`stopSequences`, `logprobs` (top candidates), a `responseMimeType` other than text/plain, response
schemas, non-text `responseModalities`, speech and image config, `cachedContent`. `safetySettings`,
`labels` and `toolConfig.retrievalConfig` are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote

from harnessrl.proxy import sse
from harnessrl.proxy.canonical import CanonicalRequest, Completion, count_parts, expect, fit_advice
from harnessrl.proxy.dialects.base import Endpoint
from harnessrl.proxy.dialects.gemini_input import camel, is_image, parse_contents, parse_tools, tool_config
from harnessrl.types import RequestError

PREFIXES = ("/v1beta/models/", "/v1/models/")
METHODS = ("generateContent", "streamGenerateContent", "countTokens")
GOOGLE_METHODS = frozenset(
    {
        *METHODS,
        "embedContent",
        "batchEmbedContents",
        "asyncBatchEmbedContent",
        "batchGenerateContent",
        "computeTokens",
        "predict",
        "predictLongRunning",
        "generateAnswer",
        "generateMessage",
        "generateText",
        "countMessageTokens",
        "countTextTokens",
        "embedText",
        "batchEmbedText",
    }
)
"""The methods of Google's `models` resource (Gemini API and Vertex AI): `/v1/models/<m>:<method>` with
one of these is Google's path (a 404 in its shape when not served), whatever the client."""
KEEPALIVE = b"\n"
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_IGNORED = ("temperature", "topP", "topK", "seed", "presencePenalty", "frequencyPenalty")


def google_error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """Google's error body (google.rpc.Status as JSON)."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _STATUS.get(status, "INTERNAL")}
    if param is not None:
        violation = {"field": param, "description": message}
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}
        ]
    return {"error": error}


def _count_json(n: int) -> dict[str, Any]:
    return {"totalTokens": n}


def _generation(raw: Any) -> tuple[int | None, bool, bool]:
    """`generationConfig` -> (maxOutputTokens, responseLogprobs, includeThoughts); 400s as listed above."""
    if raw is None:
        return None, False, False
    config = camel(expect(raw, dict, "generationConfig"))

    def field(name: str) -> Any:
        return config.get(name)

    def refuse(name: str, why: str) -> None:
        raise RequestError(f"generationConfig.{name} {why}", param=f"generationConfig.{name}")

    count = field("candidateCount")
    if count is not None and count != 1:
        refuse("candidateCount", "must be 1: one candidate per request")
    if field("stopSequences"):
        refuse("stopSequences", "is not supported (the engine stops at the end-of-turn token only)")
    if field("logprobs"):
        refuse("logprobs", "is not supported (the engine records only the sampled token's log-prob)")
    if field("responseMimeType") not in (None, "", "text/plain"):
        refuse("responseMimeType", f"={field('responseMimeType')!r} is not supported (text/plain only)")
    for name in ("responseSchema", "responseJsonSchema", "speechConfig", "imageConfig"):
        if field(name) is not None:
            refuse(name, "is not supported")
    modalities = field("responseModalities")
    if modalities and any(
        m != "TEXT" for m in expect(modalities, list, "generationConfig.responseModalities")
    ):
        refuse("responseModalities", f"={modalities!r} is not supported (TEXT only)")
    cap = field("maxOutputTokens")
    if cap is not None:
        expect(cap, int, "generationConfig.maxOutputTokens")
        if cap < 1:
            refuse("maxOutputTokens", "must be >= 1")
    thinking = camel(field("thinkingConfig"))
    include = False
    if thinking is not None:
        include = expect(thinking, dict, "generationConfig.thinkingConfig").get("includeThoughts") is True
        budget = thinking.get("thinkingBudget")
        if budget is not None and (not isinstance(budget, int) or budget < -1):
            refuse("thinkingConfig.thinkingBudget", "must be an integer >= -1")
    return cap, field("responseLogprobs") is True, include


class GeminiDialect:
    """Bound to one request's model and stream form by `match` (the registry's instance is unbound)."""

    name = "gemini"
    routes = tuple(f"{p}{{model}}:{m}" for p in PREFIXES for m in METHODS)
    tool_id_prefix = "call_"
    response_id_prefix = ""

    def __init__(self, model: str = "", stream: bool = False, sse: bool = True) -> None:
        self.model, self.stream, self.sse = model, stream, sse
        self.keepalive = KEEPALIVE
        self.stream_media_type = "text/event-stream" if sse else "application/json"

    models_paths: tuple[str, ...] = ("/v1beta/models", "/v1/models")

    def endpoints(self) -> dict[str, Endpoint]:
        return {}

    def owns(self, route: str) -> bool:
        if route.startswith("/v1beta/"):
            return True
        return route.startswith("/v1/models/") and route.rpartition(":")[2] in GOOGLE_METHODS

    def recognises(self, headers: Mapping[str, str], query: bytes) -> bool:
        """The SDKs send `x-goog-api-client` and the key as `x-goog-api-key`; curl users `?key=`."""
        if "x-goog-api-key" in headers or "x-goog-api-client" in headers:
            return True
        return bool(query) and "key" in parse_qs(query.decode("latin-1"))

    def count_images(self, raw: bytes, body: dict[str, Any]) -> int:
        if b"image/" not in raw and b"\\u" not in raw:
            return 0
        return count_parts(body.get("contents"), is_image)

    def model_json(self, name: str, context_length: int | None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": f"models/{name}",
            "baseModelId": name,
            "version": "harnessrl",
            "displayName": name,
            "description": "the policy being trained, served by harnessrl",
            "supportedGenerationMethods": list(METHODS),
        }
        if context_length is not None:
            entry |= {"inputTokenLimit": context_length, "outputTokenLimit": context_length}
        return entry

    def models_json(self, names: list[str], context_length: int | None) -> dict[str, Any]:
        return {"models": [self.model_json(n, context_length) for n in names]}

    def match(self, route: str, query: bytes) -> Endpoint | None:
        """`/v1beta/models/<model>:<method>` (+ `?alt=sse`, `?key=`) -> an endpoint bound to a dialect
        for that model and stream form; None for any other path."""
        prefix = next((p for p in PREFIXES if route.startswith(p)), None)
        if prefix is None:
            return None
        model, sep, method = route[len(prefix) :].rpartition(":")
        if not sep or not model or "/" in model or method not in METHODS:
            return None
        params = parse_qs(query.decode("latin-1")) if query else {}
        stream = method == "streamGenerateContent"
        sse_form = params.get("alt", [""])[0] == "sse" or not stream
        bound = GeminiDialect(unquote(model), stream, sse=sse_form)
        count = _count_json if method == "countTokens" else None
        return Endpoint(bound, count, params.get("key", [None])[0])

    def overflow(self, prompt_tokens: int, limit: int, what: str) -> tuple[str, str | None, str | None]:
        message = (
            f"The input token count ({prompt_tokens}) exceeds the maximum number of tokens allowed "
            f"({limit}). {fit_advice(what)}"
        )
        return message, "contents", None

    def parse(self, body: dict[str, Any]) -> CanonicalRequest:
        body = camel(body)
        inner = body.get("generateContentRequest")  # countTokens' long form
        if inner is not None:
            body = camel(expect(inner, dict, "generateContentRequest"))
        if body.get("cachedContent") is not None:
            raise RequestError("cachedContent is not supported (no server-side state)", param="cachedContent")
        cap, logprobs, thoughts = _generation(body.get("generationConfig"))
        tools = parse_tools(body.get("tools") or [])
        none = tool_config(body.get("toolConfig"), tools)
        return CanonicalRequest(
            dialect=self.name,
            model=self.model,
            messages=parse_contents(body),
            tools=[] if none else tools,
            max_tokens=cap,
            stream=self.stream,
            tool_choice_none=none,
            logprobs=logprobs,
            options={"include_thoughts": thoughts},
        )

    def _candidate(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if c.reasoning and req.options.get("include_thoughts"):
            parts.append({"text": c.reasoning, "thought": True})
        if c.text or not c.tool_calls:
            parts.append({"text": c.text})
        for tc in c.tool_calls:
            parts.append({"functionCall": {"id": tc.id, "name": tc.name, "args": tc.arguments}})
        finish = "MAX_TOKENS" if c.finish_reason == "length" else "STOP"
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "finishReason": finish}
        if c.logprobs is not None:
            chosen = [{"token": text, "logProbability": lp} for text, lp in c.logprobs]
            candidate["avgLogprobs"] = sum(lp for _, lp in c.logprobs) / max(1, len(c.logprobs))
            candidate["logprobsResult"] = {"topCandidates": [], "chosenCandidates": chosen}
        candidate["index"] = 0
        return candidate

    def response_json(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        usage = {
            "promptTokenCount": c.prompt_tokens,
            "candidatesTokenCount": c.output_tokens,
            "totalTokenCount": c.prompt_tokens + c.output_tokens,
        }
        return {
            "candidates": [self._candidate(req, c)],
            "usageMetadata": usage,
            "modelVersion": c.model,
            "responseId": c.response_id,
        }

    def stream_head(self, req: CanonicalRequest, response_id: str, prompt_tokens: int) -> list[bytes]:
        return [] if self.sse else [b"["]

    def stream_events(self, req: CanonicalRequest, c: Completion) -> list[bytes]:
        body = self.response_json(req, c)
        return [sse.event(body)] if self.sse else [sse.dumps(body).encode(), b"]"]

    def error_json(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        return google_error(status, message, param)

    def stream_error(self, req: CanonicalRequest, response_id: str, status: int, message: str) -> list[bytes]:
        body = google_error(status, message)
        return [sse.event(body)] if self.sse else [sse.dumps(body).encode(), b"]"]
